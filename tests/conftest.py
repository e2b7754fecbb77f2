"""Shared fixtures: a small, valid record to break in each test, and helpers to run the commands."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "claims"
VOCABULARY = CLAIMS / "_vocabulary.yaml"

# A minimal record in format v1 that validates cleanly. Tests copy it and change one thing.
GOOD = textwrap.dedent(
    """\
    id: example-run
    title: An Example Training Report
    organization: Example Lab
    published: 2024-07-23
    models: [Example 7B]
    sources:
      - id: paper
        title: An Example Training Report
        url: https://example.org/report
        kind: primary
        checked: 2026-08-02
    claims:
      - id: unexpected-interruptions
        statement: 419 unexpected interruptions in a 54-day snapshot.
        value: 419
        unit: interruptions
        source: paper
        locator: Sec. 3.3.4
        quote: The remaining 419 were unexpected interruptions
        verified: 2026-08-02
        status: confirmed
        patterns: [failure-scaling]
        topics: [ops-staffing]
      - id: snapshot-days
        statement: The statistics cover a 54-day snapshot.
        value: 54
        unit: days
        source: paper
        verified: 2026-08-02
        status: confirmed
      - id: hours-between-interruptions
        statement: About one unexpected interruption every 3.1 hours.
        value: 3.1
        unit: hours
        status: derived
        formula: snapshot-days * 24 / unexpected-interruptions
        tolerance: 0.02
    disclosures:
      ops-staffing: {status: partial, note: Interruption statistics but no staffing., claims: [unexpected-interruptions]}
    unsaid:
      - The tooling that produced the interruption statistics was not published.
    """
)


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    """An empty knowledge base folder with the project's vocabulary."""
    d = tmp_path / "claims"
    d.mkdir()
    shutil.copy(VOCABULARY, d / "_vocabulary.yaml")
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
