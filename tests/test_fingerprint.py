"""A build knows when it has nothing to do (its fingerprint), and the fingerprint is honest: it covers the code of
every verdict provider, so a change to the auditor is not answered with "up to date" and the old verdicts."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import CLAIMS

PROVIDER = '''\
STATUS = "{status}"


def kb_verdicts(validation):
    return [{{"report": rec.report.id, "omission": "contamination", "status": STATUS, "evidence": [], "missing": []}}
            for rec in validation.loaded.records]
'''


def install_provider(root: Path, status: str) -> None:
    """A verdict provider as an installed package would register it: the code, and a dist-info whose entry
    point is in the group report_claims.verdicts."""
    (root / "fakeaudit").mkdir(parents=True, exist_ok=True)
    (root / "fakeaudit" / "__init__.py").write_text(PROVIDER.format(status=status))
    info = root / "fakeaudit-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeaudit\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[report_claims.verdicts]\nfake = fakeaudit:kb_verdicts\n")


def build(tmp_path: Path, plugins: Path) -> subprocess.CompletedProcess:
    kb = Path(sys.executable).parent / "kb"
    env = {**os.environ, "PYTHONPATH": str(plugins)}
    return subprocess.run([str(kb), "build", "--claims", str(CLAIMS), "--db", str(tmp_path / "kb.db")],
                          capture_output=True, text=True, env=env, timeout=600)


def verdicts(db: Path) -> set:
    conn = sqlite3.connect(db)
    try:
        return set(conn.execute("select audited from verdicts where provider = 'fake'"))
    finally:
        conn.close()


def test_a_change_to_a_verdict_provider_changes_the_fingerprint_and_the_stored_verdicts(tmp_path):
    plugins = tmp_path / "plugins"
    install_provider(plugins, "absent")
    first = build(tmp_path, plugins)
    assert first.returncode == 0, first.stderr
    assert verdicts(tmp_path / "kb.db") == {("absent",)}
    again = build(tmp_path, plugins)
    assert "is up to date" in again.stderr  # nothing changed: nothing to do

    install_provider(plugins, "partial")  # the provider's behaviour changes, its version does not
    changed = build(tmp_path, plugins)
    assert changed.returncode == 0, changed.stderr
    assert "is up to date" not in changed.stderr
    assert verdicts(tmp_path / "kb.db") == {("partial",)}
    # and the auditor's own verdicts are still stored beside the other provider's
    conn = sqlite3.connect(tmp_path / "kb.db")
    assert {p for (p,) in conn.execute("select distinct provider from verdicts")} == {"audit", "fake"}
    conn.close()
