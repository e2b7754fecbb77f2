"""The benchmarks' corpus generator makes knowledge bases that `kb validate` accepts without a problem, and the same
claims flattened for the one-table baselines."""

from __future__ import annotations

import json
import sys
from datetime import date

import yaml

from conftest import ROOT, TODAY

sys.path.insert(0, str(ROOT))
from benchmarks.generate import generate  # noqa: E402


def test_a_generated_corpus_validates_cleanly(tmp_path, kb):
    c = generate(tmp_path / "claims", reports=8, claims=40, seed=3, today=TODAY,
                 flat_yaml=tmp_path / "flat.yaml", flat_json=tmp_path / "flat.json")
    assert (c.reports, c.claims) == (8, 320) and c.derived > 0
    r = kb("validate", "--claims", c.folder)
    assert r.exit_code == 0, r.output
    assert "8 files, 8 records, 320 claims: 0 errors, 0 warnings" in r.stderr
    text = "".join(p.read_text() for p in c.folder.glob("[!_]*.yaml"))
    for feature in ("status: derived", "formula: ", "patterns: [", "topics: [", "value: [", "status: contradicted",
                    "disclosures:", "unsaid:"):
        assert feature in text, feature
    assert any("/" in line for line in text.splitlines() if "formula:" in line)  # a formula across reports
    rows = json.loads((tmp_path / "flat.json").read_text())
    assert len(rows) == 320 and len(yaml.safe_load((tmp_path / "flat.yaml").read_text())) == 320
    assert {r["ref"] for r in rows} == {f"{p.stem}/{cl['id']}" for p in c.folder.glob("[!_]*.yaml")
                                        for cl in yaml.safe_load(p.read_text())["claims"]}


def test_the_same_seed_makes_the_same_corpus(tmp_path):
    a = generate(tmp_path / "a", reports=3, claims=20, seed=5, today=date(2026, 11, 29))
    b = generate(tmp_path / "b", reports=3, claims=20, seed=5, today=date(2026, 11, 29))
    assert [a.path(i).read_text() for i in range(3)] == [b.path(i).read_text() for i in range(3)]


def test_the_stages_of_a_cold_build_are_timed_on_a_generated_corpus(tmp_path):
    """`python -m benchmarks.options stages` runs the build's stages one by one, as kb.store.build does."""
    import subprocess

    c = generate(tmp_path / "claims", reports=4, claims=20, seed=7, today=TODAY)
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run([sys.executable, "-m", "benchmarks.options", "stages", str(c.folder), str(work)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    stages = json.loads(r.stdout.splitlines()[-1])
    assert {"checks (kb.checks)", "pattern graph (kb.graph)", "write SQLite: rows, indexes, FTS"} <= set(stages)
    assert any(name.startswith("auditor verdicts") for name in stages)
    assert all(seconds >= 0 for seconds in stages.values())
    assert (work / "stages.db").is_file()
