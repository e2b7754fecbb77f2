"""The auditor's quality, measured on a labelled set: `python -m auditor.quality [--split test|seeds|dev]`.

The labelled set is the records of the knowledge base (`claims/`: a record's `disclosures` are its labels, so a
judgement has one owner), the records of tests/audit_labelled/records for reports outside the knowledge base, and
the texts of tests/audit_labelled (labels.yaml); tests/audit_labelled/split.yaml says which reports are held out.
Records are audited with their `topics` and `disclosures` removed: an auditor that reads the answer is not
measured. For each omission: exact agreement over the three levels, agreement on absent against present, the
confusion matrix; for records, the evidence claims found against those the judgement names (recall, precision).
A text is audited without the lines it opens with to say where its passages were read (report_text).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from kb.load import load_file, load_vocabulary, packaged

from .audit import Auditor
from .rules import LEVELS

STATUSES = ["absent", "partial", "disclosed"]
ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "tests" / "audit_labelled"
KB = ROOT / "claims"


@dataclass
class Item:
    report: str
    input: str  # record | text
    path: Path
    expected: dict[str, str]
    evidence: dict[str, set] = field(default_factory=dict)  # omission → claim refs (records)
    got: dict[str, str] = field(default_factory=dict)
    found: dict[str, set] = field(default_factory=dict)


@dataclass
class Scores:
    items: list[Item]
    omissions: list[str]

    def pairs(self, input_: Optional[str] = None, omission: Optional[str] = None):
        for it in self.items:
            if input_ and it.input != input_:
                continue
            for o in self.omissions:
                if omission and o != omission:
                    continue
                yield it, o, it.expected[o], it.got[o]

    def exact(self, input_=None, omission=None) -> tuple[int, int]:
        ps = list(self.pairs(input_, omission))
        return sum(e == g for _, _, e, g in ps), len(ps)

    def presence(self, input_=None, omission=None) -> tuple[int, int]:
        ps = list(self.pairs(input_, omission))
        return sum((e == "absent") == (g == "absent") for _, _, e, g in ps), len(ps)

    def matrix(self, input_=None, omission=None) -> dict[tuple[str, str], int]:
        return Counter((e, g) for _, _, e, g in self.pairs(input_, omission))

    def evidence(self) -> tuple[float, float, int, int, int]:
        """Recall and precision of the evidence claims of records, over judgements that name evidence."""
        hit = gold = found = 0
        for it in self.items:
            if it.input != "record":
                continue
            for o in self.omissions:
                g, f = it.evidence.get(o, set()), it.found.get(o, set())
                if not g:
                    continue
                hit += len(g & f)
                gold += len(g)
                found += len(f)
        return (hit / gold if gold else 0.0), (hit / found if found else 0.0), hit, gold, found


def split_of(name: str) -> set[str]:
    split = yaml.safe_load((SET / "split.yaml").read_text())
    return set(split[name])


def labelled_records(names: set[str]) -> dict[str, Path]:
    """report → the record that labels it: the knowledge base's own, else the labelled set's."""
    out = {}
    for report in names:
        for path in (KB / f"{report}.yaml", SET / "records" / f"{report}.yaml"):
            if path.is_file():
                out[report] = path
                break
    return out


def load_items(names: set[str]) -> list[Item]:
    items = []
    for report, path in sorted(labelled_records(names).items()):
        rec = load_file(path).records[0]
        d = rec.report.disclosures
        items.append(Item(report, "record", path, {o: x.status for o, x in d.items()},
                          {o: {f"{report}/{c}" for c in x.claims} for o, x in d.items()}))
    for entry in yaml.safe_load((SET / "labels.yaml").read_text()):
        report = Path(entry["file"]).stem
        if report in names:
            items.append(Item(report, "text", SET / entry["file"],
                              {o: e["status"] for o, e in entry["expected"].items()}))
    return items


# The lines a labelled text opens with to say where its passages come from ("Source: URL", "Excerpts read DATE
# from ..."): the labeller's, not the report's, so the auditor does not read them ("arxiv" there is no data source).
_PROVENANCE = ("Source: ", "Excerpts read ")
_HEADER_LINES = 8


def report_text(text: str) -> str:
    """A labelled text as the report gives it: the provenance lines between its title and the next heading blanked
    (the lines keep their numbers)."""
    lines = text.split("\n")
    for i, line in enumerate(lines[1:_HEADER_LINES], start=1):
        if line.startswith("#"):
            break
        if line.startswith(_PROVENANCE):
            lines[i] = ""
    return "\n".join(lines)


def measure(names: set[str]) -> Scores:
    vocabulary = load_vocabulary(packaged("vocabulary.yaml"))
    auditor = Auditor(vocabulary)
    items = load_items(names)
    for it in items:
        if it.input == "record":
            report = load_file(it.path).records[0].report.model_copy(update={"disclosures": {}})
            report = report.model_copy(update={"claims": [c.model_copy(update={"topics": []}) for c in report.claims]})
            verdicts = auditor.record(report)
        else:
            verdicts = auditor.text(report_text(it.path.read_text(encoding="utf-8")))
        it.got = {o: v.status for o, v in verdicts.items()}
        it.found = {o: {e.claim for e in v.evidence if e.claim} if v.status != "absent" else set()
                    for o, v in verdicts.items()}
    return Scores(items, vocabulary.omission_ids)


FIGURES = ["records_exact", "records_presence", "texts_exact", "evidence_recall", "evidence_precision",
           "seeds_exact"]
_FIGURE_NAMES = {"records_exact": "records, exact (3 levels)", "records_presence": "records, absent vs present",
                 "texts_exact": "texts, exact (3 levels)", "evidence_recall": "evidence recall (records)",
                 "evidence_precision": "evidence precision (records)",
                 "seeds_exact": "the eight cases without disclosures, exact"}


def targets() -> dict[str, dict[str, float]]:
    """The targets and floors of quality.yaml."""
    return yaml.safe_load((SET / "quality.yaml").read_text())


def figures(test: Scores, seeds: Scores) -> dict[str, tuple[int, int]]:
    """Each quality figure as (agreeing, of)."""
    _, _, hit, gold, found = test.evidence()
    return {"records_exact": test.exact("record"), "records_presence": test.presence("record"),
            "texts_exact": test.exact("text"), "evidence_recall": (hit, gold), "evidence_precision": (hit, found),
            "seeds_exact": seeds.exact("record")}


def markdown(test: Scores, seeds: Scores) -> str:
    """The figures against their targets, and the confusion matrices per omission (for the README)."""
    goals = targets()["targets"]
    measured = figures(test, seeds)
    out = ["| Measure | Measured | Target | |", "| --- | --- | --- | --- |"]
    for k in FIGURES:
        n, d = measured[k]
        out.append(f"| {_FIGURE_NAMES[k]} | {n}/{d} = {n / d:.1%} | {goals[k]:.0%} | "
                   f"{'met' if n / d >= goals[k] else '**not met**'} |")
    for title, scores, input_ in (("test split, records", test, "record"), ("test split, texts", test, "text"),
                                  ("the eight cases, records without disclosures", seeds, "record")):
        out += ["", f"Confusion matrices, {title} (rows: the label; columns: the verdict; a/p/d: absent, partial, "
                    f"disclosed):", "",
                "| Omission | exact | a→a | a→p | a→d | p→a | p→p | p→d | d→a | d→p | d→d |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for o in scores.omissions:
            m = scores.matrix(input_, o)
            n, d = scores.exact(input_, o)
            out.append(f"| {o} | {n}/{d} | " + " | ".join(str(m[(e, g)]) for e in STATUSES for g in STATUSES) + " |")
    return "\n".join(out) + "\n"


def report(scores: Scores, title: str, out=sys.stdout) -> None:
    p = lambda n, d: f"{n}/{d} ({n / d:.0%})" if d else "n/a"  # noqa: E731
    print(f"{title}: {len({i.report for i in scores.items})} reports "
          f"({sum(i.input == 'record' for i in scores.items)} records, {sum(i.input == 'text' for i in scores.items)} texts)",
          file=out)
    for input_ in ("record", "text"):
        if not any(i.input == input_ for i in scores.items):
            continue
        print(f"  {input_}s: exact {p(*scores.exact(input_))}, absent vs present {p(*scores.presence(input_))}",
              file=out)
        for o in scores.omissions:
            m = scores.matrix(input_, o)
            cells = "  ".join(f"{m[(e, g)]:2d}" for e in STATUSES for g in STATUSES)
            print(f"    {o:<15} exact {p(*scores.exact(input_, o)):<13} matrix (label→verdict, a/p/d rows): {cells}",
                  file=out)
    r, pr, hit, gold, found = scores.evidence()
    print(f"  evidence (records): recall {r:.0%} ({hit}/{gold}), precision {pr:.0%} ({hit}/{found})", file=out)


def disagreements(scores: Scores, out=sys.stdout) -> None:
    for it, o, e, g in scores.pairs():
        if e != g:
            print(f"  {it.input:6} {it.report:<26} {o:<15} label {e:<9} verdict {g}", file=out)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m auditor.quality", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["test", "seeds", "dev"], default="test")
    ap.add_argument("--disagreements", action="store_true", help="list every verdict that differs from its label")
    ap.add_argument("--markdown", action="store_true",
                    help="the README's table: the figures on the test split and the eight cases against their "
                         "targets, with confusion matrices")
    a = ap.parse_args(argv)
    if a.markdown:
        print(markdown(measure(split_of("test")), measure(split_of("seeds"))), end="")
        return 0
    scores = measure(split_of(a.split))
    report(scores, f"split {a.split}")
    if a.disagreements:
        disagreements(scores)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
