"""Citing checked figures: how a figure reads ("2.788M GPU-hours"), what its citation says (one function, in
several formats), and whether it may be cited (one rule: kb cite, kb check, the build's citable column and the
site follow it)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import date
from decimal import Decimal
from typing import Optional

from . import clock
from .model import Claim, Report, Source

_BOUND_WORDS = {"about": "about ", "at-least": "at least ", "at-most": "at most ", "exact": ""}
_SYMBOL_UNITS = {"percent": "%", "%": "%"}


def figure(claim: Claim) -> str:
    """The figure as a reader would write it: "419 interruptions", "38–43%", "at least 20%", "2.788M GPU-hours"."""
    if claim.value is None:
        return ""
    text = claim.value_text or (f"{claim.low}–{claim.high}" if claim.is_range else f"{claim.value}")
    unit = (claim.unit or "").strip()
    if unit.lower() in _SYMBOL_UNITS:
        body = f"{text}{_SYMBOL_UNITS[unit.lower()]}"
    else:
        body = f"{text} {unit}".strip()
    return _BOUND_WORDS.get(claim.bound, "") + body


@dataclass
class Citation:
    """What a citation of one claim says, decided here once: `kb cite` (every format), the footnotes of
    `kb render` and the site's citation box are renderings of it."""

    ref: str
    figure: str  # "419 interruptions", or the statement for a claim without a figure
    report: str  # "The Llama 3 Herd of Models (Meta, 2024)"
    source: Optional[str]  # the source's title, when it is not the report's
    locator: Optional[str]
    where: Optional[str]  # the source's URL (or its path in this repository)
    url: Optional[str]  # the source's URL, when it has one
    checked: str  # "checked 2026-11-29", "recomputed on every build" or "no check date"
    status: str
    derived: Optional[str] = None  # "derived: formula = 3.09"

    def text(self) -> str:
        parts = [self.report, self.derived, self.source, self.locator, self.where, f"{self.checked}, {self.status}"]
        return f"{self.figure} — " + ", ".join(p for p in parts if p)


def citation_of(report: Report, claim: Claim, source: Optional[Source] = None,
                computed: Optional[float] = None) -> Citation:
    """The citation of one claim."""
    source = source or (report.source(claim.source) if claim.source else None)
    derived = None
    if claim.status == "derived":
        derived = f"derived: {claim.formula}" + (f" = {computed:.4g}" if computed is not None else "")
    if claim.verified:
        checked = f"checked {claim.verified.isoformat()}"
    else:
        checked = "recomputed on every build" if claim.status == "derived" else "no check date"
    return Citation(
        ref=f"{report.id}/{claim.id}", figure=figure(claim) or claim.statement,
        report=f"{report.title} ({report.organization}, {report.published.year})",
        source=source.title if source is not None and source.title != report.title else None,
        locator=claim.locator, where=(source.url or source.path) if source is not None else None,
        url=source.url if source is not None else None, checked=checked, status=claim.status, derived=derived)


def citation(report: Report, claim: Claim, source: Optional[Source] = None, computed: Optional[float] = None) -> str:
    """A ready-to-paste citation of one claim, plain text (the site's citation box, `kb cite --format text`)."""
    return citation_of(report, claim, source, computed).text()


# The knowledge base as a citable index.


@dataclass
class Cited:
    ref: str
    report: Report
    claim: Claim
    source: Optional[Source]
    computed: Optional[float] = None
    inputs: list[str] = field(default_factory=list)


class Index:
    """The claims of a validated knowledge base by reference, with what citing them needs."""

    def __init__(self, validation, today: Optional[date] = None, max_age: Optional[int] = None):
        self.validation = validation
        self.today = clock.today(today)
        # how old a check may be: the vocabulary's one setting, unless a command is given another
        self.max_age = max_age if max_age is not None else validation.vocabulary.stale_after_days
        self.claims: dict[str, Cited] = {}
        derived = validation.checked.derived if validation.checked else {}
        # The context records too: a derived claim may be cited when the claims its formula uses may be.
        for rec in [*validation.context_records, *validation.loaded.records]:
            r = rec.report
            for c in r.claims:
                check = derived.get((r.id, c.id))
                self.claims[f"{r.id}/{c.id}"] = Cited(
                    f"{r.id}/{c.id}", r, c, r.source(c.source) if c.source else None,
                    check.computed if check else None, check.inputs if check else [])

    def get(self, ref: str) -> Optional[Cited]:
        return self.claims.get(ref)

    def suggest(self, ref: str) -> Optional[str]:
        from rapidfuzz import fuzz, process

        best = process.extractOne(ref, list(self.claims), scorer=fuzz.ratio, score_cutoff=75)
        return best[0] if best else None

    def citable(self, ref: str, _seen: Optional[set] = None) -> tuple[bool, str]:
        """Whether a claim may be cited, and why not: confirmed or secondary with a check younger than max_age;
        a derived figure when its formula checks out and every input may be cited."""
        cited = self.claims[ref]
        c = cited.claim
        if c.status == "derived":
            check = self.validation.checked.derived.get(tuple(ref.split("/", 1)))
            if check is None or not check.ok:
                return False, "its formula does not check out"
            seen = (_seen or set()) | {ref}
            for i in cited.inputs:
                if i in seen:
                    continue
                ok, why = self.citable(i, seen)
                if not ok:
                    return False, f"its input {i} cannot be cited: {why}"
            return True, ""
        if c.status not in ("confirmed", "secondary"):
            why = {"contradicted": f"it is contradicted: {c.note}", "unverified": "it is unverified"}
            return False, why.get(c.status, f"its status is {c.status}")
        if c.verified is None:
            return False, "it has no check date"
        age = (self.today - c.verified).days
        if age > self.max_age:
            return False, f"its check is stale: {age} days old (limit {self.max_age})"
        return True, ""

    def citation(self, ref: str) -> Citation:
        cited = self.claims[ref]
        return citation_of(cited.report, cited.claim, cited.source, cited.computed)

    def search(self, text: str, limit: int = 8) -> list[tuple[str, float]]:
        """Claims whose statement, figure or reference best match the text (rapidfuzz token-set ratio)."""
        from rapidfuzz import fuzz, process, utils

        choices = {ref: f"{ref.replace('-', ' ').replace('/', ' ')} {c.claim.statement} {figure(c.claim)}"
                   for ref, c in self.claims.items()}
        found = process.extract(text, choices, scorer=fuzz.token_set_ratio, processor=utils.default_process,
                                limit=limit, score_cutoff=40)
        return [(key, round(score, 1)) for _, score, key in found]


def render_citation(idx: Index, ref: str, fmt: str) -> str:
    """One claim's citation as markdown, text, bibtex or json."""
    cited = idx.claims[ref]
    r, c, s = cited.report, cited.claim, cited.source
    cit = idx.citation(ref)
    inputs = [i for i in cited.inputs if i in idx.claims]
    if fmt == "json":
        ok, why = idx.citable(ref)
        return json.dumps({
            "ref": ref, "figure": cit.figure, "statement": c.statement, "value": c.value, "value_text": c.value_text,
            "unit": c.unit, "bound": c.bound, "status": c.status,
            "checked": c.verified.isoformat() if c.verified else None,
            "report": {"id": r.id, "title": r.title, "organization": r.organization,
                       "published": r.published.isoformat()},
            "source": ({"id": s.id, "title": s.title, "url": s.url, "path": s.path, "kind": s.kind} if s else None),
            "locator": c.locator, "quote": c.quote, "formula": c.formula, "computed": cited.computed,
            "inputs": [{"ref": i, "figure": figure(idx.claims[i].claim)} for i in inputs],
            "citable": ok, "why_not": why or None, "citation": cit.text(),
        }, indent=2)
    if fmt == "text":
        out = cit.text()
        if c.status == "derived":
            out += "\n" + "\n".join(f"  from {i}: {idx.citation(i).text()}" for i in inputs)
        return out
    if fmt == "bibtex":
        key = re.sub(r"[^A-Za-z0-9]+", ":", ref)
        fields = {
            "title": f"{r.title}" + (f" ({cit.source})" if cit.source else ""),
            "author": f"{{{r.organization}}}",
            "year": str(r.published.year),
            "howpublished": f"\\url{{{cit.url}}}" if cit.url else (cit.where or ""),
            "note": "; ".join(x for x in [cit.figure, c.locator or "", cit.checked if c.verified else "",
                                          c.status, f"kb:{ref}"] if x),
        }
        body = ",\n".join(f"  {k} = {{{_bibtex_escape(v)}}}" for k, v in fields.items() if v)
        return f"@misc{{{key},\n{body}\n}}"
    # markdown
    where = f", {c.locator}" if c.locator else ""
    date_text = f"; {cit.checked}" if c.verified else ""
    title = cit.source or (s.title if s else r.title)
    src = f"[{_md_text(title)}]({cit.url})" if cit.url else _md_text(title)
    out = f"{_md_text(cit.figure)} ({src}{where}{date_text}, {c.status})"
    if c.status == "derived":
        out += f"; derived as `{c.formula}` from " + ", ".join(
            f"{_md_text(figure(idx.claims[i].claim))} (`{i}`)" for i in inputs)
    return out


def _bibtex_escape(s: str) -> str:
    return s.replace("%", "\\%").replace("&", "\\&").replace("#", "\\#").replace("_", "\\_")


def _md_text(s: str) -> str:
    return s.replace("[", "\\[").replace("]", "\\]")
