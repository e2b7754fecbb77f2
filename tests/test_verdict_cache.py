"""Verdicts kept between builds (.cache/verdicts): a cold build with the cache reads the auditor's verdicts
instead of auditing every report, and stores exactly what a build without it stores."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from conftest import CLAIMS, ROOT, TODAY, children
from kb.pipeline import validate_kb
from kb.providers import providers
from kb.store import BuildError, build

sys.path.insert(0, str(ROOT))
from benchmarks.generate import generate  # noqa: E402


def verdict_table(db: Path) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("select * from verdicts order by report, omission, provider").fetchall()
    finally:
        conn.close()


def cached_files(cache: Path) -> list[Path]:
    return sorted((cache / "verdicts").rglob("*.json"))


def copy_kb(tmp_path: Path) -> Path:
    claims = tmp_path / "kb" / "claims"
    shutil.copytree(CLAIMS, claims)
    return claims


def test_a_cold_build_with_the_cache_stores_the_same_verdicts_as_one_without(tmp_path):
    claims = copy_kb(tmp_path)
    cache = tmp_path / "cache"
    build(claims, tmp_path / "first.db", today=TODAY, force=True, cache=cache)
    kept = cached_files(cache)
    assert len(kept) == len(list(claims.glob("*.yaml")))  # one file per record and provider
    stamps = {p: p.stat().st_mtime_ns for p in kept}

    build(claims, tmp_path / "cached.db", today=TODAY, force=True, cache=cache)
    assert {p: p.stat().st_mtime_ns for p in cached_files(cache)} == stamps  # read, not written again
    build(claims, tmp_path / "cold.db", today=TODAY, force=True, cache=tmp_path / "empty")
    assert verdict_table(tmp_path / "cached.db") == verdict_table(tmp_path / "cold.db") != []


def test_a_changed_record_is_audited_again(tmp_path):
    claims = copy_kb(tmp_path)
    cache = tmp_path / "cache"
    build(claims, tmp_path / "kb.db", today=TODAY, force=True, cache=cache)
    before = set(cached_files(cache))
    record = claims / "opt-175b.yaml"
    record.write_text(record.read_text() + "\n# an edit\n")
    build(claims, tmp_path / "kb.db", today=TODAY, cache=cache)
    assert len(set(cached_files(cache)) - before) == 1  # the edited record's verdicts, under its new digest


def test_a_cache_file_that_cannot_be_read_is_a_miss_not_an_error(tmp_path):
    claims = copy_kb(tmp_path)
    cache = tmp_path / "cache"
    build(claims, tmp_path / "first.db", today=TODAY, force=True, cache=cache)
    for p in cached_files(cache):
        p.write_text("{not json")
    build(claims, tmp_path / "again.db", today=TODAY, force=True, cache=cache)
    assert verdict_table(tmp_path / "again.db") == verdict_table(tmp_path / "first.db")


def test_a_large_cold_build_audits_while_it_validates_and_stores_what_auditing_after_gives(tmp_path):
    """At 40 records and more, a cold build starts auditing records in forked children as soon as they are
    validated (kb.parallel.Ahead); the verdicts it stores are those of auditing every record afterwards, here."""
    c = generate(tmp_path / "claims", reports=90, claims=12, seed=11, today=TODAY)
    build(c.folder, tmp_path / "kb.db", today=TODAY, force=True, cache=tmp_path / "empty")
    validation = validate_kb(c.folder, today=TODAY)
    expected = sorted((row["report"], row["omission"], row["status"], name)
                      for name, provider in providers() for row in provider(validation))
    stored = sorted((report, omission, audited, provider) for report, omission, _, audited, _, _, _, provider
                    in verdict_table(tmp_path / "kb.db"))
    assert len(stored) == 90 * 5 and stored == expected


def test_a_build_that_fails_after_auditing_began_leaves_no_process_behind(tmp_path):
    c = generate(tmp_path / "claims", reports=90, claims=12, seed=11, today=TODAY)
    last = sorted(c.folder.glob("[!_]*.yaml"))[-1]
    last.write_text(last.read_text().replace("claims:", "claims: [", 1))  # read last, after auditing began
    with pytest.raises(BuildError):
        build(c.folder, tmp_path / "kb.db", today=TODAY, force=True, cache=tmp_path / "empty")
    assert not children() and not (tmp_path / "kb.db").exists()
