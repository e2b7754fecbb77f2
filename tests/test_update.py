"""`kb build` after a few record files change: an update of the last database, not a new one.

The build keeps the sha256 of every record file it read (table _files). When the vocabulary, the code and the day
are the same and only a few files changed, it copies the last database, replaces the rows of the changed reports
and of the reports whose formulas use them, checks them against the records, and renames the copy over. What it
writes is the same, table for table, as a full build of the same files.
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import date, timedelta

import pytest

from conftest import CLAIMS, TODAY, VOCABULARY
from kb.db.read import database_checksum, meta as read_meta
from kb.db.schema import TABLES
from kb.store import BuildError, build




@pytest.fixture
def kbdir(tmp_path):
    """A copy of the project's knowledge base, built once."""
    claims = tmp_path / "claims"
    shutil.copytree(CLAIMS, claims)
    db = tmp_path / "kb.db"
    first = build(claims, db, today=TODAY)
    assert not first.updated
    return claims, db


def dump(db_path) -> dict[str, list]:
    """Every row of every table, in order (rowids left out: an update numbers new rows after the old ones)."""
    conn = sqlite3.connect(db_path)
    try:
        out = {}
        for t in TABLES:
            cols = ", ".join(f"[{c}]" for c in t.column_names)
            out[t.name] = sorted(conn.execute(f'select {cols} from "{t.name}"').fetchall(), key=repr)
        return out
    finally:
        conn.close()


def search(db_path, words: str) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        return sorted(r for (r,) in conn.execute(
            "select c.ref from claims c join claims_fts f on f.rowid = c.rowid where claims_fts match ?", (words,)))
    finally:
        conn.close()


def intact(db_path) -> None:
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
        assert conn.execute("pragma foreign_key_check").fetchall() == []
        conn.execute("insert into claims_fts (claims_fts) values ('integrity-check')")  # raises if out of step
    finally:
        conn.close()


def full_build_of(claims, tmp_path):
    other = tmp_path / "full.db"
    build(claims, other, today=TODAY, force=True)
    return other


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_changed_statement_updates_only_its_report(kbdir, tmp_path):
    claims, db = kbdir
    edit(claims / "llama-3-405b.yaml", "419 unexpected interruptions", "419 unexpected kumquat interruptions")
    result = build(claims, db, today=TODAY)
    assert result.updated == ["llama-3-405b"]
    intact(db)
    full = full_build_of(claims, tmp_path)
    assert dump(db) == dump(full)
    assert read_meta(db)["checksum"] == result.checksum == database_checksum(db) == read_meta(full)["checksum"]
    assert search(db, "kumquat") == ["llama-3-405b/unexpected-interruptions"]
    assert search(db, "unexpected") == search(full, "unexpected")


def test_what_another_reports_formula_sees_changing_updates_that_report_too(kbdir, tmp_path):
    claims, db = kbdir
    # lessons-from-published-training-runs computes from llama-3-405b/hours-between-interruptions, which is
    # computed from unexpected-interruptions: an old check date makes all three uncitable
    llama = claims / "llama-3-405b.yaml"
    text = llama.read_text()
    at = text.index("id: unexpected-interruptions")
    llama.write_text(text[:at] + text[at:].replace("verified: 2026-12-01", "verified: 2025-01-02", 1))
    result = build(claims, db, today=TODAY)
    assert result.updated == ["lessons-from-published-training-runs", "llama-3-405b"]
    intact(db)
    assert dump(db) == dump(full_build_of(claims, tmp_path))
    conn = sqlite3.connect(db)
    assert conn.execute("select citable from claims where ref = 'llama-3-405b/hours-between-interruptions'"
                        ).fetchone() == (0,)


def test_an_update_keeps_the_databases_permissions(kbdir):
    import os
    import stat

    claims, db = kbdir
    os.chmod(db, 0o644)
    edit(claims / "olmo.yaml", "title: ", "title:  ")
    assert build(claims, db, today=TODAY).updated == ["olmo"]
    assert stat.S_IMODE(db.stat().st_mode) == 0o644


def test_a_new_file_and_a_removed_file_are_an_update_too(kbdir, tmp_path):
    claims, db = kbdir
    shutil.copy(claims / "olmo.yaml", tmp_path / "olmo.yaml")
    (claims / "olmo.yaml").unlink()
    result = build(claims, db, today=TODAY)
    assert result.updated == ["olmo"]
    intact(db)
    assert dump(db) == dump(full_build_of(claims, tmp_path))
    assert not [r for r in dump(db)["reports"] if r[0] == "olmo"]

    shutil.copy(tmp_path / "olmo.yaml", claims / "olmo.yaml")
    assert build(claims, db, today=TODAY).updated == ["olmo"]
    assert dump(db) == dump(full_build_of(claims, tmp_path))


def test_an_update_that_breaks_a_formula_elsewhere_fails_and_leaves_the_database_alone(kbdir):
    claims, db = kbdir
    before = db.read_bytes()
    # the claim another report's formula uses is gone
    edit(claims / "llama-3-405b.yaml", "id: hours-between-interruptions", "id: hours-between-stops")
    with pytest.raises(BuildError) as e:
        build(claims, db, today=TODAY)
    assert any("lessons-from-published-training-runs.yaml" in p.path and "hours-between-interruptions" in p.message
               for p in e.value.problems)
    assert db.read_bytes() == before


def test_a_new_file_that_takes_another_reports_id_gets_the_full_builds_error(kbdir):
    claims, db = kbdir
    (claims / "more").mkdir()
    shutil.copy(claims / "olmo.yaml", claims / "more" / "olmo.yaml")  # the id is the file's name, in any folder
    with pytest.raises(BuildError) as e:
        build(claims, db, today=TODAY)
    assert any("also used by" in p.message for p in e.value.problems)


@pytest.mark.parametrize("what", ["vocabulary", "many files"])
def test_a_new_vocabulary_or_many_changed_files_make_a_full_build(kbdir, what):
    claims, db = kbdir
    today = TODAY
    if what == "vocabulary":
        (claims / "_vocabulary.yaml").write_text(VOCABULARY.read_text() + "\n# changed\n")
        edit(claims / "olmo.yaml", "title: ", "title:  ")
    else:
        for f in sorted(claims.glob("[!_]*.yaml")):  # every file: past the share an update is worth
            f.write_text(f.read_text() + "\n")
    result = build(claims, db, today=today)
    assert not result.skipped and result.updated == []
    intact(db)


def test_a_build_of_yesterday_is_updated_today_with_the_ages_of_the_checks_counted_again(kbdir, tmp_path):
    claims, db = kbdir
    result = build(claims, db, today=TODAY + timedelta(days=1))
    assert not result.skipped and result.updated == [] and result.refreshed
    assert dump(db) == dump(_full(claims, tmp_path, TODAY + timedelta(days=1)))
    intact(db)


def test_a_check_that_goes_stale_overnight_rewrites_its_report_and_only_it(tmp_path):
    claims = tmp_path / "claims"
    shutil.copytree(CLAIMS, claims)
    # one claim of olmo checked exactly a year before the first build: still citable then, stale a day later
    edit(claims / "olmo.yaml", "verified: 2026-12-01", f"verified: {TODAY - timedelta(days=365)}")
    db = tmp_path / "kb.db"
    build(claims, db, today=TODAY)
    before = _citable(db)
    result = build(claims, db, today=TODAY + timedelta(days=1))
    assert result.updated == ["olmo"]
    after = _citable(db)
    assert {ref for ref in before if before[ref] != after[ref]} and all(
        ref.startswith("olmo/") for ref in before if before[ref] != after[ref])
    assert dump(db) == dump(_full(claims, tmp_path, TODAY + timedelta(days=1)))


def _full(claims, tmp_path, today):
    other = tmp_path / "full.db"
    build(claims, other, today=today, force=True)
    return other


def _citable(db) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("select ref, citable from claims"))
    finally:
        conn.close()


def test_kb_build_says_which_reports_it_updated(kbdir, kb):
    claims, db = kbdir
    edit(claims / "olmo.yaml", "title: ", "title:  ")
    r = kb("build", "--claims", claims, "--db", db)
    assert r.exit_code == 0, r.output
    assert "updated " in r.stderr and "1 report (olmo)" in r.stderr


def test_files_are_recognised_by_size_and_mtime_and_hashed_when_those_change(tmp_path):
    """Like make and git, a build does not read again a file whose size and mtime are what the last build
    recorded; `--force` reads everything. A file modified within two seconds of being read has no stamp
    recorded, so a second change in the same mtime tick is never missed."""
    import os

    claims = tmp_path / "claims"
    shutil.copytree(CLAIMS, claims)
    olmo = claims / "olmo.yaml"
    past = 1_700_000_000_000_000_000  # 2023-11-14
    for f in claims.iterdir():
        os.utime(f, ns=(past, past))
    db = tmp_path / "kb.db"
    build(claims, db, today=TODAY)
    conn = sqlite3.connect(db)
    stamp = conn.execute("select stamp from _files where path = 'olmo.yaml'").fetchone()[0]
    conn.close()
    assert stamp == f"{olmo.stat().st_size}:{past}"

    text = olmo.read_text()
    olmo.write_text(text.replace("title: OLMo", "title: XLMo", 1))  # same size, new mtime: read, and an update
    result = build(claims, db, today=TODAY)
    assert result.updated == ["olmo"]
    conn = sqlite3.connect(db)
    assert conn.execute("select stamp from _files where path = 'olmo.yaml'").fetchone()[0] is None  # just written
    conn.close()

    os.utime(olmo, ns=(past, past))
    build(claims, db, today=TODAY, force=True)
    olmo.write_text(text.replace("title: OLMo", "title: YLMo", 1))
    os.utime(olmo, ns=(past, past))  # same size and mtime as recorded: taken as unchanged
    assert build(claims, db, today=TODAY).skipped
    assert build(claims, db, today=TODAY, force=True).updated == []  # --force reads it
    conn = sqlite3.connect(db)
    assert conn.execute("select title from reports where id = 'olmo'").fetchone()[0].startswith("YLMo")
