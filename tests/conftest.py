"""Shared fixtures: a small, valid record to break in each test, and helpers to run the commands.

Two rules hold for every test:
- The clock is fixed. KB_TODAY is set to TODAY for the session (and the processes tests start), so no test reads
  the real clock; a test about another day passes `today=` or `--today`.
- Tests on fixed data read the fixture knowledge base (tests/fixtures/kb/claims, a frozen copy of the records),
  never `claims/`, which contributors change; tests of `claims/` itself check invariants, not counts
  (test_knowledge_base.py).
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb.load import packaged

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "tests" / "fixtures" / "kb" / "claims"  # the fixture knowledge base
REAL_CLAIMS = ROOT / "claims"  # the project's knowledge base: invariants only
VOCABULARY = packaged("vocabulary.yaml")
TEMPLATE = packaged("template.yaml")
TODAY = date(2026, 12, 1)


def pytest_configure(config):
    # for the whole session, fixtures of every scope and the processes tests start included
    os.environ["KB_TODAY"] = TODAY.isoformat()


def pytest_sessionfinish(session, exitstatus):
    """A skipped test is not a passing one: the run fails when any test skipped."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and exitstatus == 0:
        reporter.write_line(f"FAILED: {len(skipped)} test(s) skipped; every test must run (install every extra: "
                            f"pip install -e '.[test,pdf,bench]')", red=True)
        session.exitstatus = 1

# A minimal record in format v1 that validates cleanly. Tests copy it and change one thing.
GOOD = (ROOT / "tests" / "fixtures" / "good-record.yaml").read_text(encoding="utf-8")


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    """An empty knowledge base folder (the packaged vocabulary applies)."""
    d = tmp_path / "claims"
    d.mkdir()
    return d


@pytest.fixture
def write(kb_dir: Path):
    """write(text, name='example-run') puts a record file in the knowledge base folder and returns its path."""

    def _write(text: str, name: str = "example-run", suffix: str = ".yaml") -> Path:
        p = kb_dir / f"{name}{suffix}"
        p.write_text(text, encoding="utf-8") if isinstance(text, str) else p.write_bytes(text)
        return p

    return _write


@pytest.fixture
def kb():
    """kb(*args) runs the `kb` command in-process and returns click's Result (exit_code, stdout, stderr)."""
    from kb.cli import cli

    def _run(*args: str, env: dict | None = None):
        return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)

    return _run


def replace(text: str, old: str, new: str, count: int = 1) -> str:
    """text with old replaced by new, failing loudly if old is not there (so a test never breaks silently)."""
    assert old in text, f"{old!r} not in the record"
    return text.replace(old, new, count)


def children() -> set[int]:
    """The processes this one has forked and not yet reaped (Linux: /proc; a fork keeps its parent's name, and so
    does a zombie, which the programs a build starts do not: the `rm` of kb.db.atomic.replace)."""
    me = os.getpid()
    with open(f"/proc/{me}/comm") as f:
        name = f.read()
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/comm") as f:
                    same = f.read() == name
            except OSError:
                continue
            if int(fields[1]) == me and same:
                found.add(int(entry))
    return found
