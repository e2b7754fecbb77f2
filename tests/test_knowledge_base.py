"""The project's own knowledge base, claims/: invariants that hold however many records it holds and however they
change. (Tests on fixed data read the fixture knowledge base, tests/fixtures/kb.)

Dates are judged as of the latest date written in the records, not the real clock: a record checked tomorrow
does not make today's suite fail, and the suite passes on any day.
"""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from conftest import REAL_CLAIMS, ROOT
from kb.load import load_paths, record_files
from kb.model import parse_number
from kb.pipeline import validate_files, validate_kb
from kb.store import build

OMISSIONS = {"failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"}
DOC = ROOT / "docs" / "checkpoint-planning.md"


def latest_date(claims) -> str:
    dates = []
    for rec in load_paths([claims]).records:
        r = rec.report
        dates += [r.published, *(s.checked for s in r.sources), *(s.retrieved for s in r.sources if s.retrieved),
                  *(c.verified for c in r.claims if c.verified)]
    return max(dates).isoformat()


TODAY = latest_date(REAL_CLAIMS)


@pytest.fixture(scope="module")
def kb():
    from datetime import date

    result = validate_kb(REAL_CLAIMS, today=date.fromisoformat(TODAY))
    return result, {rec.report.id: rec for rec in result.loaded.records}


def test_every_record_validates_strictly(kb):
    result, records = kb
    assert [str(p) for p in result.problems] == []
    assert len(records) == len(record_files(REAL_CLAIMS))


def test_every_figure_is_loaded_as_written(kb):
    # Read the files a second, independent way (PyYAML's pure-Python composer, no typing of values) and compare
    # each claim's id and figure as written with what the loader produced.
    _, records = kb
    for path in record_files(REAL_CLAIMS):
        root = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
        fields = {k.value: v for k, v in root.value}
        loaded = records[fields["id"].value].report
        assert len(fields["claims"].value) == len(loaded.claims), path
        for node, claim in zip(fields["claims"].value, loaded.claims):
            raw = {k.value: v for k, v in node.value}
            assert raw["id"].value == claim.id
            if "value" not in raw:
                assert claim.value is None
            elif isinstance(raw["value"], yaml.SequenceNode):
                low, high = raw["value"].value
                assert claim.value == (parse_number(low.value), parse_number(high.value))
            else:
                assert claim.value_text == raw["value"].value and claim.value == parse_number(raw["value"].value)


def test_every_figure_reaches_the_database_unchanged(kb, tmp_path):
    from datetime import date

    result, records = kb
    db = tmp_path / "kb.db"
    build(REAL_CLAIMS, db, today=date.fromisoformat(TODAY))
    conn = sqlite3.connect(db)
    stored = {ref: (text, low, high) for ref, text, low, high in
              conn.execute("select ref, value_text, low, high from claims")}
    conn.close()
    written = {f"{r.report.id}/{c.id}": (c.value_text, None if c.value is None else float(c.low),
                                         None if c.value is None else float(c.high))
               for r in records.values() for c in r.report.claims}
    assert stored == written
    # the omission heatmap (/omissions) has a row for every report judged
    conn = sqlite3.connect(db)
    rows = {r for (r,) in conn.execute("select report from omission_matrix")}
    conn.close()
    assert rows == {rid for rid, rec in records.items() if rec.report.disclosures}


def test_every_training_report_is_judged_on_the_five_omissions_and_says_what_it_does_not_say(kb):
    _, records = kb
    for rid, rec in records.items():
        r = rec.report
        if not r.models:  # not a training report (the article the project comes from)
            continue
        assert set(r.disclosures) == OMISSIONS, rid
        assert r.unsaid, rid
        for omission, d in r.disclosures.items():
            assert d.note, f"{rid}: {omission} has no note saying why"
            if d.status != "absent":
                assert d.claims, f"{rid}: {omission} is {d.status} without evidence claims"


def test_confirmed_figures_carry_the_sources_words_and_every_source_names_the_copy_read(kb):
    _, records = kb
    confirmed = [c for rec in records.values() for c in rec.report.claims if c.status == "confirmed"]
    quoted = [c for c in confirmed if c.quote]
    assert all(c.quote or c.no_quote for c in confirmed)  # kb validate --strict holds it too (KB310)
    assert len(quoted) >= 0.95 * len(confirmed)
    for rec in records.values():
        for s in rec.report.sources:
            assert s.note, f"{rec.report.id}/{s.id}: say which copy of the source was read"


def test_quotes_of_sources_kept_in_this_repository_are_verbatim(kb):
    _, records = kb
    for rec in records.values():
        r = rec.report
        for c in r.claims:
            s = r.source(c.source) if c.source else None
            if c.quote and s is not None and s.path:
                text = " ".join((ROOT / s.path).read_text(encoding="utf-8").split())
                assert " ".join(c.quote.split()) in text, f"{r.id}/{c.id}"


def test_the_worked_planning_note_checks_out_against_the_knowledge_base(kb):
    from click.testing import CliRunner

    from kb.cli import cli

    r = CliRunner().invoke(cli, ["check", str(DOC), "--claims", str(REAL_CLAIMS), "--today", TODAY])
    assert r.exit_code == 0, r.stdout
