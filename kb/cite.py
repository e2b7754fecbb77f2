"""Citing checked figures: how a figure reads ("2.788M GPU-hours"), its citation in several formats, whether it
may be cited, and planning documents that cite figures with `[text](kb:report/claim)` links (check, render).
"""

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
DEFAULT_MAX_AGE = 365


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


def citation(report: Report, claim: Claim, source: Optional[Source] = None, computed: Optional[float] = None) -> str:
    """A ready-to-paste citation of one claim, plain text."""
    source = source or (report.source(claim.source) if claim.source else None)
    head = figure(claim) or claim.statement
    parts = [f"{report.title} ({report.organization}, {report.published.year})"]
    if claim.status == "derived":
        computed_text = f" = {computed:.4g}" if computed is not None else ""
        parts.append(f"derived: {claim.formula}{computed_text}")
    if source is not None:
        if source.title != report.title:
            parts.append(source.title)
        if claim.locator:
            parts.append(claim.locator)
        parts.append(source.url or source.path or "")
    elif claim.locator:
        parts.append(claim.locator)
    if claim.verified:
        checked = f"checked {claim.verified.isoformat()}"
    else:
        checked = "recomputed on every build" if claim.status == "derived" else "no check date"
    parts.append(f"{checked}, {claim.status}")
    return f"{head} — " + ", ".join(p for p in parts if p)


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

    def __init__(self, validation, today: Optional[date] = None, max_age: int = DEFAULT_MAX_AGE):
        self.validation = validation
        self.today = clock.today(today)
        self.max_age = max_age
        self.claims: dict[str, Cited] = {}
        derived = validation.checked.derived if validation.checked else {}
        # The context records too: a derived claim may be cited when the claims its formula uses may be.
        for rec in [*getattr(validation, "context_records", []), *validation.loaded.records]:
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
    fig = figure(c) or c.statement
    checked = c.verified.isoformat() if c.verified else None
    if fmt == "json":
        ok, why = idx.citable(ref)
        return json.dumps({
            "ref": ref, "figure": fig, "statement": c.statement, "value": c.value, "value_text": c.value_text,
            "unit": c.unit, "bound": c.bound, "status": c.status, "checked": checked,
            "report": {"id": r.id, "title": r.title, "organization": r.organization,
                       "published": r.published.isoformat()},
            "source": ({"id": s.id, "title": s.title, "url": s.url, "path": s.path, "kind": s.kind} if s else None),
            "locator": c.locator, "quote": c.quote, "formula": c.formula, "computed": cited.computed,
            "inputs": [{"ref": i, "figure": figure(idx.claims[i].claim)} for i in cited.inputs if i in idx.claims],
            "citable": ok, "why_not": why or None,
        }, indent=2)
    if fmt == "text":
        out = citation(r, c, s, cited.computed)
        if c.status == "derived":
            out += "\n" + "\n".join(f"  from {i}: {citation(idx.claims[i].report, idx.claims[i].claim)}"
                                    for i in cited.inputs if i in idx.claims)
        return out
    if fmt == "bibtex":
        key = re.sub(r"[^A-Za-z0-9]+", ":", ref)
        fields = {
            "title": f"{r.title}" + (f" ({s.title})" if s and s.title != r.title else ""),
            "author": f"{{{r.organization}}}",
            "year": str(r.published.year),
            "howpublished": f"\\url{{{s.url}}}" if s and s.url else (s.path if s and s.path else ""),
            "note": "; ".join(x for x in [fig, c.locator or "", f"checked {checked}" if checked else "",
                                          c.status, f"kb:{ref}"] if x),
        }
        body = ",\n".join(f"  {k} = {{{_bibtex_escape(v)}}}" for k, v in fields.items() if v)
        return f"@misc{{{key},\n{body}\n}}"
    # markdown
    where = f", {c.locator}" if c.locator else ""
    date_text = f"; checked {checked}" if checked else ""
    if s and s.url:
        src = f"[{_md_text(s.title)}]({s.url})"
    elif s:
        src = _md_text(s.title)
    else:
        src = _md_text(r.title)
    out = f"{_md_text(fig)} ({src}{where}{date_text}, {c.status})"
    if c.status == "derived":
        inputs = ", ".join(f"{_md_text(figure(idx.claims[i].claim))} (`{i}`)" for i in cited.inputs
                           if i in idx.claims)
        out += f"; derived as `{c.formula}` from {inputs}"
    return out


def _bibtex_escape(s: str) -> str:
    return s.replace("%", "\\%").replace("&", "\\&").replace("#", "\\#").replace("_", "\\_")


def _md_text(s: str) -> str:
    return s.replace("[", "\\[").replace("]", "\\]")


# Figures as people write them.

_WORD_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "b": 1e9,
                "bn": 1e9, "trillion": 1e12, "t": 1e12}
_FIGURE = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"(?:\s*(?:[–-]|to)\s*(?P<high>\d+(?:\.\d+)?))?"
    r"(?P<suffix>[KMBT](?![a-z])|\s?(?:thousand|million|billion|trillion)\b)?",
)


@dataclass
class Written:
    """A figure found in text: its value (with its scale), its precision, and the words after it."""

    value: float
    high: Optional[float]
    half_ulp: float  # half a unit of the last digit written, in the same scale as value
    after: str
    span: tuple[int, int]


def figures_in(text: str) -> list[Written]:
    out = []
    for m in _FIGURE.finditer(text):
        raw = m.group("num").replace(",", "")
        d = Decimal(raw)
        exp = d.as_tuple().exponent
        scale = 1.0
        suffix = (m.group("suffix") or "").strip().lower()
        if suffix:
            scale = _WORD_SCALES[suffix]
        half = 0.5 * 10.0 ** exp * scale if isinstance(exp, int) else 0.0
        high = float(m.group("high")) * scale if m.group("high") else None
        out.append(Written(float(d) * scale, high, half, text[m.end():m.end() + 40].strip(), m.span()))
    return out


def _claim_half_ulp(c: Claim) -> float:
    text = (c.value_text or "").strip()
    m = re.match(r"^[+-]?(\d+(?:\.(\d*))?)(?:[eE]([+-]?\d+))?([KMBT])?$", text)
    if not m:
        return 0.0
    decimals = len(m.group(2) or "")
    exp10 = int(m.group(3) or 0)
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(m.group(4) or "", 1.0)
    return 0.5 * 10.0 ** (exp10 - decimals) * scale


def matches(written: Written, claim: Claim, units) -> bool:
    """Whether a written figure agrees with the claim's value, allowing for how both were rounded and for units
    ("43 min" against 0.72 hours, "2.8 million" against 2.788M)."""
    if claim.value is None:
        return True
    low, high = float(claim.low), float(claim.high)
    slack_claim = _claim_half_ulp(claim)
    factor_text, factor_claim = 1.0, 1.0
    norm_claim = units.normalize(claim.unit)
    words = written.after.split()
    norm_text = None
    for n in range(min(4, len(words)), 0, -1):
        candidate = " ".join(words[:n]).strip(".,;:)")
        norm_text = units.normalize(candidate)
        if norm_text:
            break
    if norm_claim and norm_text and norm_claim.base == norm_text.base:
        factor_text, factor_claim = norm_text.factor, norm_claim.factor
    w_low = written.value * factor_text
    w_high = (written.high if written.high is not None else written.value) * factor_text
    # Each side is as precise as its last written digit; the coarser of the two decides.
    slack = max(written.half_ulp * factor_text, slack_claim * factor_claim) + 1e-12 * max(abs(w_low), 1.0)
    c_low, c_high = low * factor_claim, high * factor_claim
    if claim.is_range or written.high is not None:
        return abs(w_low - c_low) <= slack and abs(w_high - c_high) <= slack or \
            (written.high is None and c_low - slack <= w_low <= c_high + slack)
    return abs(w_low - c_low) <= slack


# Planning documents.

_LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<target>kb:[^)\s]*)\)")
_REF = re.compile(r"^kb:(?P<ref>[a-z][a-z0-9]*(?:-[a-z0-9]+)*/[a-z][a-z0-9]*(?:-[a-z0-9]+)*)$")
_BARE = re.compile(r"\(kb:|\]\(\s*kb\s*:|<kb:")


@dataclass
class DocProblem:
    path: str
    line: int
    col: int
    message: str
    ref: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"

    def github(self) -> str:
        from .problems import Problem

        return Problem(self.path, self.message, self.line, self.col).github()


@dataclass
class DocLink:
    line: int
    col: int
    text: str
    ref: Optional[str]
    span: tuple[int, int]


def links_in(text: str) -> tuple[list[DocLink], list[tuple[int, int, str]]]:
    """The kb: links of a Markdown document, and malformed ones as (line, col, why)."""
    links, bad, covered = [], [], []
    for m in _LINK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        ref = _REF.match(m.group("target"))
        covered.append(m.span())
        if ref is None:
            bad.append((line, col, f"malformed kb: link {m.group('target')!r}: write kb:report/claim"))
            continue
        links.append(DocLink(line, col, m.group("text"), ref.group("ref"), m.span()))
    for m in _BARE.finditer(text):
        if any(a <= m.start() < b for a, b in covered):
            continue
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        bad.append((line, col, "malformed kb: link: write [text](kb:report/claim) on one line"))
    return links, bad


def check_document(path: str, text: str, idx: Index, units) -> list[DocProblem]:
    """Every problem with the kb: links of one document."""
    links, bad = links_in(text)
    out = [DocProblem(path, line, col, why) for line, col, why in bad]
    for link in links:
        cited = idx.get(link.ref)
        if cited is None:
            hint = idx.suggest(link.ref)
            out.append(DocProblem(path, link.line, link.col, f"unknown claim kb:{link.ref}"
                                  + (f"; did you mean kb:{hint}?" if hint else ""), link.ref))
            continue
        ok, why = idx.citable(link.ref)
        if not ok:
            out.append(DocProblem(path, link.line, link.col, f"kb:{link.ref} cannot be cited: {why}", link.ref))
        written = figures_in(link.text)
        c = cited.claim
        if written and c.value is not None and not any(matches(w, c, units) for w in written):
            out.append(DocProblem(path, link.line, link.col,
                                  f"the link text says {link.text!r}, but kb:{link.ref} is {figure(c)}", link.ref))
    return sorted(out, key=lambda p: (p.line, p.col))


def render_document(text: str, idx: Index) -> str:
    """The document with kb: links turned into links to their sources and a footnote per figure."""
    links, _ = links_in(text)
    notes: dict[str, int] = {}
    out, pos = [], 0
    for link in links:
        cited = idx.get(link.ref)
        out.append(text[pos:link.span[0]])
        pos = link.span[1]
        if cited is None:
            out.append(text[link.span[0]:link.span[1]])
            continue
        n = notes.setdefault(link.ref, len(notes) + 1)
        url = cited.source.url if cited.source and cited.source.url else None
        out.append(f"[{link.text}]({url})[^kb{n}]" if url else f"{link.text}[^kb{n}]")
    out.append(text[pos:])
    body = "".join(out).rstrip("\n")
    if notes:
        body += "\n\n"
        for ref, n in notes.items():
            body += f"[^kb{n}]: {_footnote(idx, ref)}\n"
    return body + ("\n" if not body.endswith("\n") else "")


def _footnote(idx: Index, ref: str) -> str:
    cited = idx.claims[ref]
    r, c, s = cited.report, cited.claim, cited.source
    parts = [figure(c) or c.statement, f"{r.title} ({r.organization}, {r.published.year})"]
    if s and s.title != r.title:
        parts.append(s.title)
    if c.locator:
        parts.append(c.locator)
    if c.status == "derived":
        parts.append(f"derived as {c.formula} from " + ", ".join(cited.inputs))
    tail = (f"checked {c.verified.isoformat()}" if c.verified
            else "recomputed on every build" if c.status == "derived" else "no check date")
    return ", ".join(parts) + f"; {tail} ({c.status}; kb:{ref})."


def as_json_problems(problems: list[DocProblem]) -> str:
    return json.dumps({"ok": not problems, "problems": [asdict(p) for p in problems]}, indent=2)
