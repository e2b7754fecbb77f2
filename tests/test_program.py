"""The `kb` and `audit` scripts exit without tearing the interpreter down (kb.program.run), and lose nothing by it:
the command's exit code, everything it printed, and the atexit handlers (temporary folders' clean-up) all
happen as at Python's usual exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent("""\
    import atexit, sys, tempfile, threading, time
    import click
    from kb.program import run

    @click.command()
    @click.argument("code", type=int)
    @click.option("--thread", is_flag=True)
    def command(code, thread):
        folder = tempfile.TemporaryDirectory()  # removed by a finalizer Python runs at exit
        print(folder.name)
        atexit.register(lambda: print("atexit ran", file=sys.stderr))
        if thread:
            threading.Thread(target=time.sleep, args=(0.2,)).start()
        sys.stdout.write("no newline, still printed")  # left in the buffer
        sys.exit(code)

    run(command, "example")
""")


@pytest.mark.parametrize("code", [0, 1, 2])
@pytest.mark.parametrize("thread", [False, True])
def test_a_command_exits_with_its_code_having_printed_everything_and_cleaned_up(tmp_path, code, thread):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script), str(code), *(["--thread"] if thread else [])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == code
    folder, rest = r.stdout.split("\n", 1)
    assert rest == "no newline, still printed"
    assert r.stderr == "atexit ran\n"
    assert not Path(folder).exists()


def test_a_usage_error_is_clicks_exit_code_2_with_its_message(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script), "not-a-number"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Usage: example" in r.stderr and "not a valid integer" in r.stderr


def test_a_command_runs_with_fewer_collections(tmp_path):
    """kb.collector: its imports and records live until it ends, so the collector walks them less often."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent("""\
        import gc, click
        from kb.program import run

        @click.command()
        def command():
            print(*gc.get_threshold())

        run(command, "example")
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    from kb.collector import OLDEST, YOUNG

    young, middle, oldest = map(int, r.stdout.split())
    assert young == YOUNG > 700 and oldest == OLDEST and r.returncode == 0
