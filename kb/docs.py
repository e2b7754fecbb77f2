"""Planning documents that cite figures with `[text](kb:report/claim)` links: find the links, check that each
resolves, that the figure in its text matches the knowledge base however it is written, and that the claim may
be cited (`kb check`); or turn the links into links to the sources with a footnote per figure (`kb render`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

from . import codes
from .cite import Index, figure
from .model import ID, Claim, precision
from .problems import Problem

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


def matches(written: Written, claim: Claim, units) -> bool:
    """Whether a written figure agrees with the claim's value, allowing for how both were rounded and for units
    ("43 min" against 0.72 hours, "2.8 million" against 2.788M)."""
    if claim.value is None:
        return True
    low, high = float(claim.low), float(claim.high)
    slack_claim = precision(claim.value_text or "")
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
_REF = re.compile(rf"^kb:(?P<ref>{ID}/{ID})$")
_BARE = re.compile(r"\(kb:|\]\(\s*kb\s*:|<kb:")


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


def check_document(path: str, text: str, idx: Index, units) -> list[Problem]:
    """Every problem with the kb: links of one document."""
    links, bad = links_in(text)
    out = [Problem(path, codes.MALFORMED_LINK, why, line, col) for line, col, why in bad]
    for link in links:
        cited = idx.get(link.ref)
        if cited is None:
            hint = idx.suggest(link.ref)
            out.append(Problem(path, codes.UNKNOWN_CLAIM, f"unknown claim kb:{link.ref}"
                               + (f"; did you mean kb:{hint}?" if hint else ""), link.line, link.col))
            continue
        ok, why = idx.citable(link.ref)
        if not ok:
            out.append(Problem(path, codes.NOT_CITABLE, f"kb:{link.ref} cannot be cited: {why}", link.line, link.col))
        written = figures_in(link.text)
        c = cited.claim
        if written and c.value is not None and not any(matches(w, c, units) for w in written):
            out.append(Problem(path, codes.FIGURE_MISMATCH,
                               f"the link text says {link.text!r}, but kb:{link.ref} is {figure(c)}", link.line,
                               link.col))
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
    """A footnote: the claim's citation (kb.cite.citation_of), with the inputs of a derived figure."""
    cited, cit = idx.claims[ref], idx.citation(ref)
    parts = [cit.figure, cit.report, cit.source, cit.locator]
    if cit.derived:
        parts.append(f"derived as {cited.claim.formula} from " + ", ".join(cited.inputs))
    return ", ".join(p for p in parts if p) + f"; {cit.checked} ({cit.status}; kb:{ref})."


def as_json_problems(problems: list[Problem]) -> str:
    return json.dumps({"ok": not any(p.severity == "error" for p in problems),
                       "problems": [p.as_dict() for p in problems]}, indent=2)
