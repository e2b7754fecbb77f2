"""`kb build`: records → SQLite, written atomically, checked against the records, skipped when unchanged."""

from __future__ import annotations

import json
import sqlite3
from datetime import date

import pytest
import sqlite_utils

from conftest import GOOD, replace
from kb.db.read import meta as read_meta
from kb.store import build, BuildError
from sitekb import CLAIMS, make_site


@pytest.fixture
def built(tmp_path):
    claims, site = make_site(tmp_path)
    db_path = site / "kb.db"
    result = build(claims, db_path, today=date(2026, 11, 29))
    return claims, db_path, result


def test_build_writes_every_table_and_reports_what_it_wrote(tmp_path, kb):
    claims, site = make_site(tmp_path)
    r = kb("build", "--claims", claims, "--db", site / "kb.db")
    assert r.exit_code == 0, r.output
    assert f"wrote {site / 'kb.db'}: 3 reports, {CLAIMS} claims, 3 sources, 5 patterns, 5 omissions" in r.stderr
    assert f"checked: all {CLAIMS} claims of the records are in the database" in r.stderr
    db = sqlite_utils.Database(site / "kb.db")
    assert set(db.table_names()) >= {"reports", "sources", "claims", "patterns", "omissions", "claim_patterns",
                                     "claim_topics", "disclosures", "derived_checks", "_meta"}
    assert set(db.view_names()) == {"omission_matrix", "pattern_support", "claim_derivations"}


def test_claims_carry_numbers_ranges_base_units_and_a_citation(built):
    _, db_path, _ = built
    db = sqlite_utils.Database(db_path)
    types = db["claims"].columns_dict
    assert types["value"] is float and types["low"] is float and types["age_days"] is int
    mfu = db["claims"].get("second-run/mfu")
    assert (mfu["value"], mfu["low"], mfu["high"], mfu["figure"]) == (None, 38, 43, "38–43%")
    hours = db["claims"].get("example-run/hours-between-interruptions")
    assert hours["value_base"] == pytest.approx(3.1 * 3600) and hours["base_unit"] == "seconds"
    first = db["claims"].get("example-run/unexpected-interruptions")
    assert first["citation"] == ("419 interruptions — An Example Training Report (Example Lab, 2024), Sec. 3.3.4, "
                                 "https://example.org/report, checked 2026-08-02, confirmed")
    assert first["citable"] == 1
    assert db["claims"].get("second-run/old-check")["citable"] == 0  # checked more than 365 days before the build
    assert db["claims"].get("second-run/aux-loss-removed")["citable"] == 0  # contradicted


def test_foreign_keys_indexes_and_full_text_search(built):
    _, db_path, _ = built
    db = sqlite_utils.Database(db_path)
    fks = {(fk.column, fk.other_table) for fk in db["claims"].foreign_keys}
    assert fks == {("report", "reports"), ("source", "sources")}
    assert {tuple(i.columns) for i in db["claims"].indexes} >= {("report",), ("status",), ("unit",), ("verified",)}
    hits = [r["ref"] for r in db["claims"].search("balance loss")]
    assert hits == ["second-run/aux-loss-removed"]


def test_views_give_the_omission_matrix_and_pattern_support(built):
    _, db_path, _ = built
    db = sqlite_utils.Database(db_path)
    matrix = {r["report"]: r for r in db["omission_matrix"].rows}
    assert set(matrix) == {"example-run", "second-run", "hostile-run"}
    assert matrix["second-run"]["contamination"] == "disclosed"
    assert matrix["example-run"]["ops-staffing"] == "partial" and matrix["example-run"]["failed-runs"] is None
    support = {r["pattern"]: r for r in db["pattern_support"].rows}
    assert (support["failure-scaling"]["reports"], support["failure-scaling"]["claims"]) == (2, 4)
    assert support["failure-scaling"]["report_ids"] == "example-run, second-run"
    assert support["staged-data-mix"]["reports"] == 0


def test_derived_checks_are_stored_with_their_recomputed_value(built):
    _, db_path, _ = built
    row = sqlite_utils.Database(db_path)["derived_checks"].get("example-run/hours-between-interruptions")
    assert row["computed"] == pytest.approx(54 * 24 / 419)
    assert row["within_tolerance"] == 1 and row["stated"] == "3.1"
    assert json.loads(row["inputs"]) == ["example-run/snapshot-days", "example-run/unexpected-interruptions"]


def test_a_second_build_with_nothing_changed_is_skipped(built, kb):
    claims, db_path, first = built
    before = db_path.read_bytes()
    again = build(claims, db_path, today=date(2026, 11, 29))
    assert again.skipped and again.checksum == first.checksum
    assert db_path.read_bytes() == before
    (claims / "example-run.yaml").write_text(replace(GOOD, "value: 54", "value: 54\n    locator: Sec. 3"))
    assert not build(claims, db_path, today=date(2026, 11, 29)).skipped


def test_a_new_day_rebuilds_so_ages_stay_true(built):
    claims, db_path, _ = built
    assert not build(claims, db_path, today=date(2026, 11, 30)).skipped
    assert sqlite_utils.Database(db_path)["claims"].get("example-run/snapshot-days")["age_days"] == 120


def test_a_failed_build_leaves_the_last_good_database_byte_identical(built, kb):
    claims, db_path, _ = built
    before = db_path.read_bytes()
    (claims / "example-run.yaml").write_text(replace(GOOD, "status: confirmed", "status: confirmd"))
    r = kb("build", "--claims", claims, "--db", db_path)
    assert r.exit_code == 1
    assert "example-run.yaml:21:13: KB203: 'confirmd' is not one of" in r.stderr
    assert "the database was not changed" in r.stderr
    assert db_path.read_bytes() == before
    assert [p.name for p in db_path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_rows_whose_references_do_not_hold_are_refused_naming_them(tmp_path):
    """The records are validated before they are written, so this is a last guard: a claim citing a source its
    report does not have (made here by changing a validated record) fails the write, naming the reference."""
    from kb.db.write import IntegrityError, write_database
    from kb.pipeline import validate_kb

    claims, _ = make_site(tmp_path)
    validation = validate_kb(claims, today=date(2026, 11, 29))
    report = validation.loaded.records[0].report
    report.claims[0].source = "nowhere"
    with pytest.raises(IntegrityError, match="foreign keys do not hold in the written database: .*"
                                             r"a claims row \(rowid 1\) refers to no sources row"):
        write_database(tmp_path / "broken.db", validation, date(2026, 11, 29), 0)


def test_a_written_database_is_checked_to_hold_the_records_claims(tmp_path):
    """The last guard before a database is renamed into place: its claims, read back, against the records' own
    checksums. A figure changed in the file (here by hand) fails it, naming how many reports differ."""
    from kb.db import checksum
    from kb.db.write import IntegrityError, holds_claims, write_database
    from kb.pipeline import validate_kb

    claims, _ = make_site(tmp_path)
    validation = validate_kb(claims, today=date(2026, 11, 29))
    written = write_database(tmp_path / "kb.db", validation, date(2026, 11, 29), 0)
    digests = checksum.of_records(validation.loaded.records)
    assert holds_claims(tmp_path / "kb.db", digests) == written.checksum
    with sqlite3.connect(tmp_path / "kb.db") as conn:
        conn.execute("update claims set value_text = '9.99' where rowid = (select min(rowid) from claims)")
    with pytest.raises(IntegrityError, match=r"does not hold the records' claims \(\d+ claims; the checksums of "
                                             r"1 report differ\)"):
        holds_claims(tmp_path / "kb.db", digests)


def test_a_problem_the_checks_find_in_a_build_names_its_line_though_the_texts_were_not_kept(built, kb):
    """A build lets each file's text go once read (the records of a large knowledge base are as large as their
    texts) and reads the file again for the line of a problem the checks find later."""
    claims, db_path, _ = built
    (claims / "example-run.yaml").write_text(replace(GOOD, "value: 3.1", "value: 3.5"))  # a derived figure off
    validated = kb("validate", "--claims", claims)
    built_again = kb("build", "--claims", claims, "--db", db_path)
    (where,) = [line.split(" KB320")[0] for line in validated.stdout.splitlines() if "KB320" in line]
    assert where.endswith("example-run.yaml:37:14:")  # file:line:col, as kb validate finds it with the text kept
    assert built_again.exit_code == 1 and f"{where} KB320" in built_again.stderr


def test_the_database_records_how_it_was_built(built):
    _, db_path, result = built
    meta = read_meta(db_path)
    assert meta["checksum"] == result.checksum and meta["checksum"].endswith(f":{CLAIMS}")
    assert json.loads(meta["counts"])["claims"] == CLAIMS


def test_datasette_opens_the_database_read_only(built):
    _, db_path, _ = built
    data = json.loads((db_path.parent / "inspect-data.json").read_text())
    assert data["kb"]["file"] == "kb.db" and data["kb"]["tables"]["claims"]["count"] == CLAIMS


def test_build_help_and_a_missing_folder(kb, tmp_path):
    assert "a failed build leaves the last good database in place" in " ".join(kb("build", "--help").stdout.split())
    r = kb("build", "--claims", tmp_path / "nope")
    assert r.exit_code == 2 and "no such folder" in r.stderr


def test_the_replaced_database_is_removed_and_readers_keep_theirs(built):
    """A rebuild renames the new database over the old one; a reader that opened the old one keeps reading it,
    and the old file is removed (by a child process, so the build need not wait for the blocks to be freed)."""
    import time

    claims, db_path, _ = built
    reader = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    before = reader.execute("select count(*) from claims").fetchone()[0]
    build(claims, db_path, today=date(2026, 11, 29), force=True)
    assert reader.execute("select count(*) from claims").fetchone()[0] == before
    reader.close()
    deadline = time.monotonic() + 5
    while list(db_path.parent.glob(".kb.db.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(db_path.parent.glob(".kb.db.*.tmp")) == []
    assert sqlite3.connect(db_path).execute("pragma integrity_check").fetchone() == ("ok",)


def test_a_build_of_a_fresh_clone_leaves_git_status_clean(tmp_path):
    """site/kb.db, site/inspect-data.json and the writer's lock are build outputs, ignored by git."""
    import subprocess
    import sys
    from pathlib import Path

    from conftest import ROOT

    if not (ROOT / ".git").exists():  # pragma: no cover - a test of the repository itself
        pytest.fail("not a git checkout: this test needs the repository")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=120)
    from test_knowledge_base import TODAY

    kb = Path(sys.executable).parent / "kb"
    r = subprocess.run([str(kb), "build", "--today", TODAY], cwd=clone, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (clone / "site" / "kb.db").exists() and (clone / "site" / "inspect-data.json").exists()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=clone, capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


def test_serve_says_the_port_is_busy_and_exits_2(kb, tmp_path):
    import socket

    claims, site = make_site(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = kb("serve", "--claims", claims, "--site", site, "--port", port)
    assert r.exit_code == 2
    assert f"port {port} on 127.0.0.1 is busy" in r.stderr
    assert "serving" not in r.stderr
    assert "/omissions" in kb("serve", "--help").stdout and "/kb/-/omissions" not in kb("serve", "--help").stdout
