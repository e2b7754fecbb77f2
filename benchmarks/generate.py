"""Synthetic knowledge bases in record format v1, for the benchmarks and the scale tests.

`generate(folder, reports=N, claims=M)` writes N record files of M claims each, plus a copy of the project's
vocabulary, that `kb validate` accepts with no errors: sources, claims of every status, figures written every way
the format allows (integers, decimals, `14.8T`-style suffixes, `3.8e25`, ranges), units known and unknown to the
vocabulary, patterns, topics, derived claims whose formulas add up (within the report and across reports),
declared disclosures and `unsaid` lines, with text that reads like a training report.

The same records can be written flattened (a row per claim, the report's fields repeated) as one YAML file
(for yaml-to-sqlite) or one JSON file (for the sqlite3 floor), so every tool loads the same claims.

Everything is deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Iterator, Optional

from kb import clock


PATTERNS = ["spike-layers", "failure-scaling", "staged-data-mix", "proxy-experiments", "arch-is-infra"]
OMISSIONS = ["failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"]

LABS = ["Northwind AI", "Helios Research", "Cobalt Labs", "Meridian", "Tern Institute", "Arcadia Compute",
        "Quillon", "Basalt", "Lumen Systems", "Orchard Research", "Kestrel", "Open Prairie"]
SIZES = ["1B", "3B", "7B", "13B", "34B", "70B", "180B", "405B", "671B"]
SECTIONS = ["Sec. 2.1", "Sec. 3.3.4", "Sec. 4.2", "Table 3", "Table 5", "Fig. 7", "Appendix B.2", "Sec. 5.1"]

# (unit, low, high, integer?, statement template, patterns, topics)
KINDS = [
    ("GPUs", 256, 32768, True, "The run used {v} {unit} at its largest.", ["failure-scaling", "arch-is-infra"], []),
    ("GPU-hours", 1e4, 5e7, False, "Pretraining took {v} {unit} in total.", ["failure-scaling"], ["failed-runs"]),
    ("tokens", 1e11, 3e13, False, "The model was pretrained on {v} {unit}.", ["staged-data-mix"],
     ["data-filtering"]),
    ("parameters", 1e9, 7e11, False, "The final model has {v} {unit}.", ["arch-is-infra"], []),
    ("percent", 1, 99, False, "Model FLOPs utilization reached {v} {unit} on the main cluster.",
     ["arch-is-infra"], []),
    ("hours", 1, 72, False, "A checkpoint was written every {v} {unit}.", ["failure-scaling"], ["ops-staffing"]),
    ("days", 5, 120, True, "The pretraining snapshot spans {v} {unit}.", ["failure-scaling"], []),
    ("interruptions", 10, 900, True, "The job saw {v} unexpected {unit} during the snapshot.",
     ["failure-scaling"], ["ops-staffing"]),
    ("restarts", 1, 60, True, "Training was restarted {v} times after divergence ({unit}).", ["spike-layers"],
     ["failed-runs"]),
    ("loss spikes", 1, 40, True, "The team recorded {v} {unit} that needed intervention.", ["spike-layers"], []),
    ("rollbacks", 1, 30, True, "Engineers performed {v} {unit} to an earlier checkpoint.", ["spike-layers"],
     ["failed-runs"]),
    ("tokens per batch", 1e6, 6e7, False, "The batch size was raised to {v} {unit} during training.",
     ["proxy-experiments"], ["hp-search"]),
    ("FLOPs", 1e22, 5e25, False, "Total training compute was about {v} {unit}.", ["proxy-experiments"], []),
    ("failures per day", 0.5, 20, False, "Roughly {v} {unit} hit the cluster.", ["failure-scaling"],
     ["ops-staffing"]),
    ("USD", 1e5, 1e8, False, "The compute cost was estimated at {v} {unit}.", [], ["failed-runs"]),
    ("tCO2eq", 10, 5000, False, "Training emitted an estimated {v} {unit}.", [], []),
    ("experts", 8, 256, True, "Each MoE layer routes among {v} {unit}.", ["arch-is-infra"], []),
    ("proxy models", 3, 80, True, "Scaling decisions came from {v} {unit} trained at small scale.",
     ["proxy-experiments"], ["hp-search"]),
    ("data stages", 2, 6, True, "The data mixture changed over {v} {unit}, ending with a cooldown.",
     ["staged-data-mix"], ["data-filtering"]),
    ("on-call engineers", 2, 40, True, "A rotation of {v} {unit} watched the run around the clock.",
     [], ["ops-staffing"]),
    ("percent of 8-grams", 0.01, 5, False, "Benchmark overlap was {v} {unit} against the training data.",
     [], ["contamination"]),
]
TITLES = ["{name} Technical Report", "Training {name}", "{name}: Open Models", "Lessons from {name}",
          "The {name} Herd", "Scaling {name}"]
SYLLABLES = ["ka", "lo", "mir", "ven", "tas", "or", "qui", "ran", "bel", "dun", "sey", "tho", "vak", "zer", "ul",
             "pen", "gra", "fi", "mon", "ast"]


def _name(rng: random.Random, index: int) -> str:
    """A made-up name, unique per index (its syllables spell the index in base 20)."""
    parts, n = [], index
    while True:
        parts.append(SYLLABLES[n % 20])
        n //= 20
        if not n:
            break
    parts.append(SYLLABLES[rng.randrange(20)])
    return "".join(parts).capitalize()


STATUSES = ["confirmed"] * 12 + ["secondary"] * 3 + ["unverified"] * 2 + ["contradicted"]
QUOTES = [
    "We report the figure as measured on the production cluster.",
    "These numbers were collected over the whole pretraining run, including restarts.",
    "The remaining interruptions were classified by root cause in the appendix.",
    "All experiments used the same tokenizer and data pipeline as the final run.",
    "We did not observe any irrecoverable loss spikes after the first stage.",
]
UNSAID = [
    "The number of failed or discarded runs before the final one is not given.",
    "The quality-classifier thresholds used for filtering are not published.",
    "How the learning-rate schedule was searched is not described.",
    "Who operated the cluster, and in how many shifts, is not said.",
    "The contamination check's threshold and the overlap found are not reported.",
]

# The second corpus (style "long"): claim texts several sentences long, quotes of two or three sentences, titles
# alike across reports, and an organisation for every few reports, as a knowledge base of real reports reads.
LONG_TITLES = ["{name}: Technical Report", "{name} Technical Report", "The {name} Technical Report",
               "{name}: Open Foundation Models", "{name}: Open Foundation and Chat Models"]
LONG_SENTENCES = [
    "The figure is the one the authors report for the final pretraining run, not for the ablations that preceded it.",
    "It was measured on the production cluster over the whole run, including the periods spent recovering from "
    "hardware failures and restarting from the last checkpoint.",
    "The report's appendix breaks it down by stage, and the totals given there agree with the main text to within "
    "rounding.",
    "Later versions of the report round it differently; the value here is the one printed in the camera-ready "
    "version.",
    "The authors compare it with two earlier runs of their own and with the published figures of comparable "
    "models, without giving the data behind that comparison.",
    "A footnote says the figure excludes development compute such as preliminary experiments, failed runs and "
    "hyperparameter searches.",
    "The same section describes how the team monitored the run, with automated health checks on every node and "
    "an on-call rotation for the interventions the automation could not handle.",
]

_PLAIN = re.compile(r"^[A-Za-z0-9(][A-Za-z0-9 ,.;()%/+'’–-]*[A-Za-z0-9.)%']$")


@dataclass
class Corpus:
    folder: Path
    reports: int
    claims: int
    derived: int
    bytes: int
    ids: list[str] = field(default_factory=list)

    def path(self, i: int) -> Path:
        return self.folder / f"{self.ids[i]}.yaml"


def scalar(v: Any) -> str:
    """A YAML scalar for a value this generator makes: plain where that reads the same in YAML 1.1 and 1.2,
    double-quoted (JSON escapes are valid YAML) otherwise."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v)
    s = str(v)
    if _PLAIN.match(s) and ": " not in s and " #" not in s and not re.match(r"^(?:yes|no|on|off|true|false|null)$",
                                                                          s, re.I):
        return s
    return json.dumps(s, ensure_ascii=False)


def _figure(rng: random.Random, low: float, high: float, integer: bool) -> tuple[Any, float]:
    """A figure as written in a record, and its numeric value."""
    if integer:
        n = rng.randint(int(low), int(high))
        return n, float(n)
    x = rng.uniform(low, high) if high / low < 100 else 10 ** rng.uniform(_log10(low), _log10(high))
    style = rng.random()
    if x >= 1e9 and style < 0.5:  # 14.8T
        for suffix, scale in (("T", 1e12), ("B", 1e9)):
            if scale <= x < 1000 * scale:
                text = f"{x / scale:.3g}{suffix}"
                return text, float(text[:-1]) * scale
    if x >= 1e7 and (style < 0.8 or x >= 1e15):  # 3.8e25
        text = f"{x:.3g}"
        if "e" not in text:
            text = f"{x:.2e}"
        return text, float(text)
    if x >= 1000:
        n = int(round(x))
        return n, float(n)
    text = f"{x:.3g}"
    return text, float(text)


def _log10(x: float) -> float:
    import math

    return math.log10(x)


def _sig(x: float, digits: int = 6) -> str:
    text = f"{x:.{digits}g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        text = f"{mantissa}e{int(exp)}"
    return text


class _Report:
    """One synthetic record, as ordered YAML lines and as a dict."""

    def __init__(self, rng: random.Random, index: int, n_claims: int, today: date,
                 earlier: list[tuple[str, str, float]], style: str = "project"):
        self.rng, self.style = rng, style
        family = _name(rng, index)
        size = rng.choice(SIZES)
        self.id = f"{family.lower()}-{size.lower()}"
        if style == "long":
            self.title = rng.choice(LONG_TITLES).format(name=f"{family} {size}")
            self.organization = f"{_name(rng, index // 3 + 104729)} {rng.choice(['AI', 'Labs', 'Research'])}"
        else:
            self.title = rng.choice(TITLES).format(name=f"{family} {size}")
            self.organization = f"{rng.choice(LABS)} {_name(rng, index + 7919)}"
        self.published = today - timedelta(days=rng.randint(400, 2000))
        checked = min(today - timedelta(days=rng.randint(1, 300)), today)
        self.models = [f"{family} {size}", f"{family} {size} Instruct"]
        self.summary = (f"The {family} {size} report describes a pretraining run of {rng.randint(2, 30)} weeks, its "
                        f"failure statistics, a staged data mixture and the proxy experiments behind its scaling "
                        f"choices; it leaves out the cost of failed runs.")
        self.sources = [
            {"id": "paper", "title": self.title, "url": f"https://example.org/papers/{self.id}", "kind": "primary",
             "checked": checked.isoformat()},
            {"id": "blog", "title": f"{family} {size} (coverage)", "url": f"https://news.example.com/{self.id}",
             "kind": "secondary", "checked": checked.isoformat(),
             "note": "Industry coverage that quotes the report's tables."},
        ]
        self.claims: list[dict] = []
        self.numeric: list[tuple[str, float]] = []  # single-figure claims a formula may use
        self.derived = 0
        for j in range(n_claims):
            if j >= 3 and j % 10 in (4, 9) and len(self.numeric) >= 2:
                self.claims.append(self._derived(j, earlier))
            else:
                self.claims.append(self._plain(j, checked))
        self.disclosures = {}
        for o in rng.sample(OMISSIONS, rng.randint(1, 3)):
            tagged = [c["id"] for c in self.claims if o in c.get("topics", [])][:2]
            d: dict[str, Any] = {"status": rng.choice(["partial", "absent", "partial"]) if not tagged else "partial",
                                 "note": f"The reviewer's reading of the {o} evidence."}
            if tagged:
                d["claims"] = tagged
            self.disclosures[o] = d
        self.unsaid = rng.sample(UNSAID, 2)

    def _plain(self, j: int, checked: date) -> dict:
        rng = self.rng
        unit, low, high, integer, template, patterns, topics = KINDS[rng.randrange(len(KINDS))]
        status = rng.choice(STATUSES)
        cid = f"{re.sub(r'[^a-z0-9]+', '-', unit.lower()).strip('-')}-{j}"
        c: dict[str, Any] = {"id": cid}
        ranged = unit == "percent" and rng.random() < 0.3
        if ranged:
            a = rng.randint(20, 50)
            written: Any = [a, a + rng.randint(1, 9)]
            shown = f"{written[0]}–{written[1]}"
        else:
            written, value = _figure(rng, low, high, integer)
            shown = str(written)
        c["statement"] = template.format(v=shown, unit=unit)[:-1] + f" (row {j} of the summary)."
        if self.style == "long":
            c["statement"] += " " + " ".join(rng.sample(LONG_SENTENCES, rng.randint(1, 3)))
        c["value"] = written
        if rng.random() < 0.15:
            c["bound"] = rng.choice(["about", "at-least", "at-most"])
        c["unit"] = unit
        c["source"] = "blog" if status == "secondary" else "paper"
        c["locator"] = rng.choice(SECTIONS)
        if rng.random() < 0.6 or status == "confirmed":  # a confirmed figure is quoted (KB310)
            c["quote"] = (" ".join([rng.choice(QUOTES)] + rng.sample(LONG_SENTENCES, rng.randint(1, 2)))
                          if self.style == "long" else rng.choice(QUOTES))
        c["verified"] = checked.isoformat()
        c["status"] = status
        if status == "contradicted":
            c["note"] = f"The source gives a different figure in {rng.choice(SECTIONS)}; the statement is kept as reported."
        elif rng.random() < 0.2:
            c["note"] = "Taken from the camera-ready version; the preprint rounds differently."
        if patterns and rng.random() < 0.7:
            c["patterns"] = patterns
        if topics and rng.random() < 0.8:
            c["topics"] = topics
        if not ranged and status != "contradicted":
            self.numeric.append((cid, value))
        return c

    def _derived(self, j: int, earlier: list[tuple[str, str, float]]) -> dict:
        rng = self.rng
        (a, va), (b, vb) = rng.sample(self.numeric, 2)
        kind = rng.randrange(5)
        if kind == 0 and earlier and vb:
            rid, cid, vc = rng.choice(earlier)  # a claim of another report
            formula, value = f"{a} * {rid}/{cid} / {b}", va * vc / vb
        elif kind == 1:
            formula, value = f"{a} + {b}", va + vb
        elif kind == 2 and vb:
            formula, value = f"{a} * 24 / {b}", va * 24 / vb
        elif kind == 3:
            formula, value = f"sqrt({a} * {b})", (va * vb) ** 0.5
        elif min(va, vb) > 0:
            formula, value = f"max({a}, {b}) / min({a}, {b})", max(va, vb) / min(va, vb)
        else:
            formula, value = f"{a} + {b} + 1", va + vb + 1
        cid = f"derived-{j}"
        self.derived += 1
        c = {"id": cid, "statement": f"Derived from {a} and {b} (row {j}): {_sig(value, 4)}.", "value": _sig(value),
             "unit": "ratio", "status": "derived", "formula": formula}
        if rng.random() < 0.3:
            c["tolerance"] = 0.02
        if rng.random() < 0.5:
            c["patterns"] = [rng.choice(PATTERNS)]
        self.numeric.append((cid, float(c["value"])))
        return c

    def exported(self) -> list[tuple[str, str, float]]:
        """Up to three figures other reports' formulas may refer to."""
        return [(self.id, cid, v) for cid, v in self.numeric[:3] if v]

    def yaml(self) -> str:
        out = [f"id: {self.id}", f"title: {scalar(self.title)}", f"organization: {scalar(self.organization)}",
               f"published: {self.published.isoformat()}",
               f"models: [{', '.join(scalar(m) for m in self.models)}]", f"summary: {scalar(self.summary)}",
               "sources:"]
        for s in self.sources:
            out += _item(s, "  ")
        out.append("claims:")
        for c in self.claims:
            out += _item(c, "  ")
        out.append("disclosures:")
        for o, d in self.disclosures.items():
            inner = ", ".join(f"{k}: {_flow(v)}" for k, v in d.items())
            out.append(f"  {o}: {{{inner}}}")
        out.append("unsaid:")
        out += [f"  - {scalar(u)}" for u in self.unsaid]
        return "\n".join(out) + "\n"

    def flat(self) -> Iterator[dict]:
        """A row per claim with the report's fields repeated: what a one-table loader gets."""
        for c in self.claims:
            row = {"ref": f"{self.id}/{c['id']}", "report": self.id, "report_title": self.title,
                   "organization": self.organization, "published": self.published.isoformat()}
            for k, v in c.items():
                row[k] = v
            yield row


def _flow(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return scalar(v)


def _item(d: dict, indent: str) -> list[str]:
    lines = []
    for i, (k, v) in enumerate(d.items()):
        lead = f"{indent}- " if i == 0 else f"{indent}  "
        lines.append(f"{lead}{k}: {_flow(v)}")
    return lines


STYLES = ("project", "long")


def records(reports: int, claims: int, seed: int = 0, today: Optional[date] = None,
            style: str = "project") -> Iterator[_Report]:
    rng = random.Random(seed)
    today = clock.today(today)
    earlier: list[tuple[str, str, float]] = []
    for i in range(reports):
        r = _Report(rng, i, claims, today, earlier, style)
        earlier = (earlier + r.exported())[-300:]
        yield r


def generate(folder: Path, reports: int, claims: int, seed: int = 0, today: Optional[date] = None,
             flat_yaml: Optional[Path] = None, flat_json: Optional[Path] = None, style: str = "project") -> Corpus:
    """Write a knowledge base of `reports` records × `claims` claims to folder (created, emptied of records
    first; the packaged vocabulary applies); optionally the same claims flattened into one YAML and one JSON file.
    `style`: "project" (short claims, the default) or "long" (claim texts and quotes of several sentences, titles
    alike, an organisation for every few reports)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    corpus = Corpus(folder, reports, 0, 0, 0)
    yaml_out = open(flat_yaml, "w", encoding="utf-8") if flat_yaml else None
    rows: list[dict] = []
    try:
        for r in records(reports, claims, seed, today, style):
            text = r.yaml()
            (folder / f"{r.id}.yaml").write_text(text, encoding="utf-8")
            corpus.ids.append(r.id)
            corpus.claims += len(r.claims)
            corpus.derived += r.derived
            corpus.bytes += len(text.encode())
            if yaml_out or flat_json:
                for row in r.flat():
                    if yaml_out:
                        yaml_out.write("\n".join(_item(row, "")) + "\n")
                    if flat_json:
                        rows.append(row)
    finally:
        if yaml_out:
            yaml_out.close()
    if flat_json:
        Path(flat_json).write_text(json.dumps(rows, ensure_ascii=False))
    return corpus


def main(argv: Optional[list[str]] = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Write a synthetic knowledge base in record format v1.")
    ap.add_argument("folder", type=Path)
    ap.add_argument("--reports", type=int, default=100)
    ap.add_argument("--claims", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--style", choices=STYLES, default="project",
                    help="project: short claims; long: long claim texts, similar titles, many organisations")
    a = ap.parse_args(argv)
    c = generate(a.folder, a.reports, a.claims, a.seed, style=a.style)
    print(f"{c.folder}: {c.reports} reports, {c.claims} claims ({c.derived} derived), {c.bytes / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
