"""The auditor's quality, measured on reports it was not tuned on.

The labelled set: the records of the knowledge base (their `disclosures`, judged by ../shared/RUBRIC.md with a note
each, are the labels), records of reports outside it (tests/audit_labelled/records), report texts of verbatim
passages (tests/audit_labelled/labels.yaml), and tests/audit_labelled/split.yaml, which froze a test split before
the auditor's second version was written. The figures are measured on that split and on
the eight cases with their topics and disclosures removed; quality.yaml holds the targets and the floors this
test holds; README.md shows the figures and confusion matrices, as `python -m auditor.quality --markdown` prints
them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from auditor import quality
from auditor.audit import Auditor
from kb.load import load_file, load_vocabulary, packaged
from kb.pipeline import validate_files

SET = Path(__file__).parent / "audit_labelled"
README = Path(__file__).parent.parent / "README.md"
OMISSIONS = ["failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"]


@pytest.fixture(scope="module")
def measured():
    test, seeds = quality.measure(quality.split_of("test")), quality.measure(quality.split_of("seeds"))
    quality.report(test, "test split")
    quality.report(seeds, "the eight cases, without topics and disclosures")
    return test, seeds


def test_the_split_is_frozen_disjoint_and_large_enough():
    split = yaml.safe_load((SET / "split.yaml").read_text())
    parts = [set(split[k]) for k in ("test", "seeds", "dev")]
    assert sum(map(len, parts)) == len(set().union(*parts)) >= 40  # each report in exactly one part
    assert len(split["test"]) >= 12
    labelled = {p.stem for p in (SET / "records").glob("*.yaml")} | {p.stem for p in (SET / "texts").glob("*.md")}
    assert labelled <= set().union(*parts)
    for name in set().union(*parts):
        assert name in quality.labelled_records({name}) or (SET / "texts" / f"{name}.md").is_file(), name


def test_a_report_of_the_knowledge_base_is_labelled_by_its_own_record_never_a_copy():
    """A judgement has one owner: re-judging a record in claims/ re-labels the auditor's set."""
    copies = [p.name for p in (SET / "records").glob("*.yaml") if (quality.KB / p.name).is_file()]
    assert copies == []
    seeds = quality.labelled_records(quality.split_of("seeds"))
    assert sorted(seeds) == sorted(quality.split_of("seeds"))
    assert all(p.parent == quality.KB for p in seeds.values())


def test_every_label_has_a_status_and_a_reason_for_each_omission():
    for entry in yaml.safe_load((SET / "labels.yaml").read_text()):
        assert (SET / entry["file"]).is_file()
        assert list(entry["expected"]) == OMISSIONS
        assert all(e["status"] in quality.STATUSES and e["reason"] for e in entry["expected"].values())
    everything = set().union(*(quality.split_of(k) for k in ("test", "seeds", "dev")))
    for path in sorted(quality.labelled_records(everything).values()):
        disclosures = load_file(path).records[0].report.disclosures
        assert list(disclosures) == OMISSIONS and all(d.note for d in disclosures.values()), path.name


def test_the_labelled_records_are_valid():
    result = validate_files(sorted((SET / "records").glob("*.yaml")), None)
    assert [str(p) for p in result.errors] == []


def test_a_record_is_measured_without_what_it_declares():
    """The verdicts do not move when the answer is written into the record: they come from claims alone."""
    auditor = Auditor(load_vocabulary(packaged("vocabulary.yaml")))
    dev = quality.labelled_records(quality.split_of("dev"))
    report = load_file(dev[sorted(dev)[0]]).records[0].report
    stripped = report.model_copy(update={"disclosures": {}, "claims": [
        c.model_copy(update={"topics": []}) for c in report.claims]})
    assert {o: v.status for o, v in auditor.record(report).items()} == \
           {o: v.status for o, v in auditor.record(stripped).items()}


def test_the_figures_on_the_test_split_and_the_eight_cases_hold_their_floors(measured):
    test, seeds = measured
    goals = quality.targets()
    for name, (n, d) in quality.figures(test, seeds).items():
        floor, target = goals["floors"][name], goals["targets"][name]
        assert floor <= target
        print(f"{name}: {n}/{d} = {n / d:.1%} (floor {floor:.0%}, target {target:.0%})")
        assert n / d >= floor - 1e-9, f"{name} fell to {n}/{d}, below its floor {floor:.0%}"


def test_a_target_met_is_held_as_its_own_floor(measured):
    goals = quality.targets()
    for name, (n, d) in quality.figures(*measured).items():
        if n / d >= goals["targets"][name]:
            assert goals["floors"][name] == goals["targets"][name], f"{name} meets its target: raise its floor"


def test_the_readme_shows_the_figures_as_measured(measured):
    block = re.search(r"<!-- quality:begin -->\n(.*?)<!-- quality:end -->", README.read_text(), re.DOTALL)
    assert block, "README.md has no quality block"
    assert block.group(1) == quality.markdown(*measured), \
        "README.md's quality block is out of date: paste `python -m auditor.quality --markdown`"


def test_a_texts_provenance_lines_are_not_read_as_the_report():
    # the labeller's "Excerpts read ... of the arXiv PDF" would name arXiv as a data source
    header = ("# Acme-7B\nSource: https://arxiv.org/abs/2501.00001\n"
              "Excerpts read 2026-12-01 from a copy of the arXiv PDF\n")
    auditor = Auditor(load_vocabulary(packaged("vocabulary.yaml")))
    assert auditor.text(header)["data-filtering"].status == "partial"
    assert auditor.text(quality.report_text(header))["data-filtering"].status == "absent"
    # only the lines between the title and the next heading: the report's own "Source:" stays; lines keep numbers
    text = header + "\n## Data\nSource: the report's own word.\n" + "line\n" * 8 + "Source: stays\n"
    kept = quality.report_text(text).split("\n")
    assert kept[:4] == ["# Acme-7B", "", "", ""] and kept[5] == "Source: the report's own word."
    assert kept[-2] == "Source: stays" and len(kept) == len(text.split("\n"))
