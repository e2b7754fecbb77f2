"""One-record commands read the rest of the knowledge base from the last built database.

`kb validate FILE` and `audit FILE` need the other reports as context: the records a formula refers to, every
title (near duplicates), every verdict (the cohort). With `--db`, a database `kb build` wrote from the same
claims folder, vocabulary and code, they take what they need from it for the files whose bytes have not changed
since (a formula's inputs too, where they are figures a record states), and read only the files of the derived
figures a formula refers to and the files changed since the build. The answers are the same as reading every
file.
"""

from __future__ import annotations

import json
import shutil
from datetime import date

import pytest

import kb.load
import kb.snapshot
from auditor.audit import audit_paths
from conftest import CLAIMS, TODAY, VOCABULARY
from kb.pipeline import validate_files, validate_kb
from kb.snapshot import open_snapshot
from kb.store import build



# A new report: a formula using a claim of llama-3-405b, a title like OLMo's, one figure that does not add up.
NEW = """\
id: olmo-again
title: OLMo 2 and Olmo 3 (2 OLMo 2 Furious)
organization: Allen Institute for AI (Ai2)
published: 2025-03-01
models: [OLMo 2 7B]
sources:
  - id: paper
    title: The paper
    url: https://example.org/olmo-again
    kind: primary
    checked: 2026-11-01
claims:
  - id: minutes-between-interruptions
    statement: Llama 3's interruptions came every 186 minutes.
    value: 186
    bound: about
    unit: minutes
    status: derived
    formula: llama-3-405b/hours-between-interruptions * 60
  - id: wrong
    statement: Twice the interruptions.
    value: 5
    unit: ratio
    status: derived
    formula: llama-3-405b/unexpected-interruptions * 2
"""


@pytest.fixture
def kbdir(tmp_path):
    claims = tmp_path / "claims"
    shutil.copytree(CLAIMS, claims)
    db = tmp_path / "kb.db"
    build(claims, db, today=TODAY)
    new = tmp_path / "olmo-again.yaml"
    new.write_text(NEW)
    return claims, db, new


@pytest.fixture
def reads(monkeypatch):
    """The record files read, by name."""
    seen: list[str] = []
    real = kb.load.load_file

    def spy(path, *a, **k):
        seen.append(str(path).rsplit("/", 1)[-1])
        return real(path, *a, **k)

    monkeypatch.setattr(kb.load, "load_file", spy)
    monkeypatch.setattr(kb.snapshot, "load_file", spy)
    return seen


def problems(v):
    return [str(p) for p in v.problems]


def test_validate_with_the_database_gives_the_same_problems_reading_only_what_a_formula_uses(kbdir, reads):
    claims, db, new = kbdir
    everything = validate_files([new], claims, today=TODAY)
    assert len(reads) == 10  # the new file and the nine records of the knowledge base
    reads.clear()
    indexed = validate_files([new], claims, today=TODAY, db=db)
    assert problems(indexed) == problems(everything)
    assert reads == ["olmo-again.yaml", "llama-3-405b.yaml"]  # the line of the title it is like is stored
    found = problems(indexed)
    assert any("wrong" not in p and "looks like olmo" in p for p in found)
    assert any("does not add up" in p and "llama-3-405b/unexpected-interruptions * 2" in p for p in found)


# Formulas that refer only to figures other records state (not derive): a figure, a range, a claim without one.
PLAIN = NEW.split("claims:\n")[0] + """\
claims:
  - id: gpu-days
    statement: Sixteen thousand GPUs for a day.
    value: 16384
    unit: GPU-days
    status: derived
    formula: llama-3-405b/training-gpus * 1
  - id: wrong
    statement: Thrice as many.
    value: 3
    unit: GPUs
    status: derived
    formula: llama-3-405b/training-gpus * 2
  - id: of-a-range
    statement: Half a range.
    value: 20
    unit: percent
    status: derived
    formula: llama-3-405b/mfu-bf16 / 2
  - id: of-nothing
    statement: Of a claim with no figure.
    value: 1
    unit: ratio
    status: derived
    formula: bloom/shared-filesystem + 1
  - id: of-a-missing-claim
    statement: Of a claim that is not there.
    value: 1
    unit: ratio
    status: derived
    formula: bloom/no-such-claim + 1
"""


def test_a_formula_takes_the_figures_other_records_state_from_the_database(kbdir, reads):
    """A stated figure of an unchanged record comes from the database as the last build stored it; only a
    claim it cannot answer for (a derived figure, a claim it does not have) sends the command to the file."""
    claims, db, new = kbdir
    new.write_text(PLAIN)
    everything = problems(validate_files([new], claims, today=TODAY))
    reads.clear()
    assert problems(validate_files([new], claims, today=TODAY, db=db)) == everything
    assert reads == ["olmo-again.yaml", "bloom.yaml"]  # bloom for the claim it does not have, not llama-3-405b
    for expected in ("does not add up: llama-3-405b/training-gpus * 2 = 32768",
                     "'llama-3-405b/mfu-bf16' is a range; a formula needs a single figure",
                     "'bloom/shared-filesystem' has no figure",
                     "no claim 'no-such-claim' in report 'bloom'"):
        assert sum(expected in p for p in everything) == 1, expected


def test_audit_validates_without_the_warnings_of_reports_alike_and_says_which_are_alike_itself(kbdir):
    claims, db, new = kbdir
    every = validate_files([new], claims, today=TODAY, db=db).problems
    unalike = validate_files([new], claims, today=TODAY, db=db, alike=False).problems
    assert [p for p in every if p.code not in ("KB323", "KB324")] == unalike != every
    similar = audit_paths([new], claims_dir=claims, today=TODAY, db=db)[0].similar
    assert [s["report"] for s in similar] == ["olmo"]


def test_files_changed_since_the_build_are_read_from_disk(kbdir, reads):
    claims, db, new = kbdir
    path = claims / "llama-3-405b.yaml"
    path.write_text(path.read_text().replace("id: unexpected-interruptions", "id: unplanned-interruptions"))
    indexed = validate_files([new], claims, today=TODAY, db=db)
    assert problems(indexed) == problems(validate_files([new], claims, today=TODAY))
    assert any("no claim 'unexpected-interruptions' in report 'llama-3-405b'" in p for p in problems(indexed))


def test_a_database_of_another_vocabulary_or_folder_is_not_used(kbdir, tmp_path):
    claims, db, _ = kbdir
    assert open_snapshot(claims, db) is not None
    other = tmp_path / "other"
    shutil.copytree(claims, other)
    assert open_snapshot(other, db) is None  # built from another folder
    # the knowledge base's own vocabulary, in place of the packaged one
    (claims / "_vocabulary.yaml").write_text(VOCABULARY.read_text() + "\n")
    assert open_snapshot(claims, db) is None
    assert open_snapshot(claims, tmp_path / "missing.db") is None
    (tmp_path / "broken.db").write_text("not a database")
    assert open_snapshot(claims, tmp_path / "broken.db") is None


def test_audit_with_the_database_gives_the_same_audit(kbdir, reads):
    """The same verdicts, cohorts (counted in the database) and similar reports, for a new report and for a
    report of the knowledge base itself, which is no part of its own cohort."""
    claims, db, new = kbdir
    files = [new, claims / "olmo.yaml"]
    everything = audit_paths(files, claims_dir=claims, today=TODAY)
    reads.clear()
    indexed = audit_paths(files, claims_dir=claims, today=TODAY, db=db)
    assert json.dumps([a.as_dict() for a in indexed]) == json.dumps([a.as_dict() for a in everything])
    assert "bloom.yaml" not in reads and "deepseek-v3.yaml" not in reads
    assert indexed[0].verdicts["failed-runs"].cohort["of"] == 8  # the eight training reports, not the article
    assert indexed[1].verdicts["failed-runs"].cohort["of"] == 7  # the seven others

    # a file changed since the build: its report is audited here, and its stored verdicts are not counted
    bloom = claims / "bloom.yaml"
    bloom.write_text("# edited\n" + bloom.read_text())
    everything = audit_paths(files, claims_dir=claims, today=TODAY)
    indexed = audit_paths(files, claims_dir=claims, today=TODAY, db=db)
    assert json.dumps([a.as_dict() for a in indexed]) == json.dumps([a.as_dict() for a in everything])
    assert indexed[1].verdicts["failed-runs"].cohort["of"] == 7


def test_the_commands_take_the_database_from_db(kbdir, kb):
    claims, db, new = kbdir
    with_db = kb("validate", new, "--claims", claims, "--db", db, "--format", "json")
    without = kb("validate", new, "--claims", claims, "--db", claims.parent / "none.db", "--format", "json")
    assert with_db.exit_code == without.exit_code == 1
    assert json.loads(with_db.stdout) == json.loads(without.stdout)
