"""Running a command as a child process and measuring it: wall time, peak resident memory of that command alone,
exit code and output.

Peak memory comes from wait4's rusage, taken by a small launcher process rather than by the caller: a process
forked from a big parent (a pytest session, the benchmark runner) starts with the parent's pages resident, and
its ru_maxrss keeps that high-water mark across exec. The launcher is a fresh interpreter of a few MB, so what
it forks is measured from a small start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

_LAUNCHER = """\
import json, os, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t = time.perf_counter()
p = subprocess.Popen(cmd)
_, status, usage = os.wait4(p.pid, 0)
seconds = time.perf_counter() - t
code = os.waitstatus_to_exitcode(status)
with open(out, "w") as f:
    json.dump({"code": code, "seconds": seconds, "maxrss_kb": usage.ru_maxrss}, f)
"""


@dataclass
class Run:
    seconds: float
    peak_mb: float
    code: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run(cmd: Sequence, cwd: Optional[Path] = None, timeout: float = 900, env: Optional[dict] = None,
        merge: bool = False) -> Run:
    """Run cmd to completion: its wall time, its own peak RSS, its exit code and output (stderr merged into
    stdout when merge). A command still running after timeout seconds is killed with its process group."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        p = subprocess.Popen([sys.executable, "-c", _LAUNCHER, report.name, *[str(c) for c in cmd]],
                             stdout=out, stderr=out if merge else err, stdin=subprocess.DEVNULL,
                             cwd=str(cwd) if cwd else None, env=env, start_new_session=True)
        killed = []

        def kill() -> None:
            killed.append(True)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            p.wait()
        finally:
            timer.cancel()
        try:
            measured = json.loads(Path(report.name).read_text() or "{}")
        except ValueError:
            measured = {}
        out.seek(0)
        err.seek(0)
        return Run(measured.get("seconds", float("inf")), measured.get("maxrss_kb", 0) / 1024,
                   measured.get("code", p.returncode), out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), bool(killed))


def python(*args: str, **kw) -> Run:
    """`python args...` with the benchmarks' interpreter (the project's venv)."""
    return run([sys.executable, *args], **kw)


def interleaved_runs(cmds: dict[str, Sequence], repeat: int = 9, **kw) -> dict[str, Run]:
    """The median run of each command, the commands taking turns (a, b, c, a, b, c, ...): on a shared machine a
    busy moment slows all of them alike, so their ratios hold where one command's runs in a row would not."""
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            runs[name].append(run(cmd, **kw))
    out = {}
    for name, rs in runs.items():
        rs.sort(key=lambda r: r.seconds)
        out[name] = rs[len(rs) // 2]
        out[name].peak_mb = max(r.peak_mb for r in rs)
    return out
