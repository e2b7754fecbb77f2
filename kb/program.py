"""Running a command as a program: the `kb` and `audit` scripts."""

from __future__ import annotations

import atexit
import os
import sys
import threading

import click

from .collector import collect_less


def run(command: click.Command, prog_name: str) -> None:
    """Run `command` as the program, collecting garbage less often (kb.collector: its imports and reading make
    many objects that live until it ends), and exit with its code without tearing the interpreter down: freeing
    every module and object one by one takes about 30 ms, a tenth of `kb validate FILE` or `audit FILE`, and the
    system frees the memory anyway. The atexit handlers run and the streams are flushed first, as at any exit;
    with a thread still running, or an exit code that is not a number, the exit is Python's usual one."""
    collect_less()  # before the command imports what it uses
    try:
        command.main(prog_name=prog_name)
        code = 0
    except SystemExit as e:
        code = e.code
    if code is None:
        code = 0
    if not isinstance(code, int) or threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()  # what Python runs at exit: temporary folders' clean-up, among others
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: Python's own exit says so
        raise SystemExit(code)
    os._exit(code)
