"""Evidence units: what the auditor reads, one at a time, with its context.

A record gives a unit per claim: its statement and quote (the report's words), its figure typed by its unit, its
locator. A report's text gives a unit per sentence, keeping the path of headings it sits under, its line and its
neighbours; a table gives a unit per row, each cell with its column's header. The kind of section a unit is in
(fine-tuning, evaluation, acknowledgements: the vocabulary's `sections`) comes from its headings (and, for a
claim, its locator).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable, Optional

from .figures import Figure, FigureReader
from .words import Phrase, PhraseIndex, offsets, phrase, read_words, tokens

if TYPE_CHECKING:  # the records and vocabulary may be kb.compiled's classes, with the same fields and methods
    from kb.model import Claim, Report, Vocabulary


@dataclass
class Unit:
    text: str  # what the unit says (for a claim: statement and quote)
    line: Optional[int] = None  # in a text
    claim: Optional[str] = None  # report/claim, in a record
    headings: tuple[str, ...] = ()
    sections: frozenset = frozenset()  # kinds of section it is in
    kind: str = "sentence"  # sentence | row | claim | heading
    words: list[str] = field(default_factory=list)
    context: str = ""  # the heading path, for anchors
    reported_from: int = 0  # where the report's own words start in text (a claim's statement is the record's)
    paragraph: int = 0  # units of one paragraph (or table) share it
    derived: bool = False  # a derived claim: the knowledge base's arithmetic on the report's figures
    # The unit's typed figures are read when first asked for (most units mention no part that takes a figure):
    # by `read_figures` from the text, then `more_figures` (a claim's own figure, typed then too) after them.
    read_figures: Optional[Callable[[str], list[Figure]]] = None
    more_figures: Optional[Callable[[], list[Figure]]] = None
    _figures: Optional[list[Figure]] = None
    # Where each word of the text starts, found when first asked for (a negation or an admission): from the pieces
    # the text was cut into when its words were read (auditor.words.read_words).
    _pieces: list[str] = field(default_factory=list)
    _offsets: Optional[list[int]] = None

    @property
    def figures(self) -> list[Figure]:
        if self._figures is None:
            self._figures = ((self.read_figures(self.text) if self.read_figures else [])
                             + (self.more_figures() if self.more_figures else []))
        return self._figures

    @figures.setter
    def figures(self, value: list[Figure]) -> None:
        self._figures = value

    @property
    def offsets(self) -> list[int]:
        """Where each word of the text starts in it (a row's words from its headers after them have none)."""
        if self._offsets is None:
            self._offsets = offsets(self._pieces)
        return self._offsets


def _not_own(figures: list[Figure], own: frozenset) -> list[Figure]:
    """The figures, less the sizes of the report's own models: "for the 120B model" is the model, not the scale of
    a search (RUBRIC.md: a model's size is not a figure of anything); nor is a list of them ("the models of size
    160M, 410M, and 1.4B" of a suite)."""
    if not own:
        return figures

    def is_own(f: Figure) -> bool:
        return f.kind == "params" and f.value is not None and any(abs(f.value - s) <= 1e-6 * s for s in own)

    def listed_own(f: Figure) -> bool:  # a range, every figure in it one of the report's sizes
        inside = [g for g in figures if g.kind != "range" and f.start <= g.start and g.end <= f.end]
        return bool(inside) and all(is_own(g) for g in inside)
    return [f for f in figures if not (is_own(f) or (f.kind == "range" and listed_own(f)))]


class Reader:
    """Turns records and texts into units, with the vocabulary's figure kinds and sections."""

    def __init__(self, vocabulary: Vocabulary):
        self.figures = FigureReader({k: list(v) for k, v in vocabulary.figure_kinds.items()})
        self.sections: dict[str, list[Phrase]] = {k: [phrase(p) for p in v] for k, v in vocabulary.sections.items()}
        self._title: Optional[str] = None  # of the text being read
        self._section_index = PhraseIndex()
        for kind, phrases in self.sections.items():
            for p in phrases:
                self._section_index.add(p, (kind, p))
        self._kinds_seen: dict[str, frozenset] = {}
        self._typed: dict[str, list[Figure]] = {}  # a claim's "value unit", typed
        self._own: frozenset[float] = frozenset()  # the sizes of the report's own models (own_sizes)

    def section_kinds(self, headings: tuple[str, ...]) -> frozenset:
        found = set()
        for h in headings:
            if h == self._title:
                continue  # the report's title names the report, not a section ("... Fine-Tuned Chat Models")
            found |= self._heading_kinds(h)
        return frozenset(found)

    def _heading_kinds(self, heading: str) -> frozenset:
        kinds = self._kinds_seen.get(heading)
        if kinds is None:
            found = {kind for (kind, _), _ in self._section_index.scan(tokens(heading))}
            if "pretraining" in found:
                found.discard("fine-tuning")  # "Pretraining and Adaptation" covers both
            kinds = frozenset(found)
            if len(self._kinds_seen) < 10_000:
                self._kinds_seen[heading] = kinds
        return kinds

    def unit(self, text: str, **kw) -> Unit:
        u = Unit(text, **kw)
        u.words, u._pieces = read_words(text)
        own = self._own  # the figures are read later, when asked for
        u.read_figures = (lambda t: _not_own(self.figures.read(t), own)) if own else self.figures.read
        return u

    def own_sizes(self, *names: Optional[str]) -> None:
        """The sizes named in the report's title and models ("GAL 120B", "Acme-7B"): not figures of a part."""
        self._own = frozenset(f.value for name in names if name for f in self.figures.read(name)
                              if f.kind == "params" and f.value)

    # Records.

    def claims(self, report: Report, where=None) -> list[Unit]:
        self._title = None
        self.own_sizes(report.title, *report.models)
        out = []
        for i, c in enumerate(report.claims):
            if c.status == "contradicted":
                continue  # its statement is what the source does not say
            text = " ".join(x for x in (c.statement, c.quote or "") if x)
            headings = (c.locator,) if c.locator else ()
            reported_from = len(c.statement) + 1 if c.quote else len(text)
            u = self.unit(text, line=where(i) if where else None, claim=f"{report.id}/{c.id}", headings=headings,
                          kind="row" if c.quote_kind == "table" else "claim", paragraph=i)
            u.sections = self.section_kinds(headings)  # a claim about fine-tuning: the rulebook reads its words
            u.more_figures = partial(self._claim_figure, c, self._own)
            u.context = " ".join(headings)
            u.reported_from = reported_from
            u.derived = c.status == "derived"
            out.append(u)
        return out

    def _claim_figure(self, c: Claim, own: frozenset) -> list[Figure]:
        """The claim's own figure, typed by its unit ("GPU-hours": compute), unless it is one of the sizes `own`."""
        if c.value is None:
            return []
        shown = f"{c.value_text or c.value} {c.unit or ''}".strip()
        typed = self._typed.get(shown)
        if typed is None:
            typed = self.figures.read(shown)[:1]
            if len(self._typed) < 100_000:  # a knowledge base repeats its units and figures
                self._typed[shown] = typed
        return _not_own(typed or [Figure("number", shown, float(c.low), 0, 0)], own)

    # Texts.

    def text(self, text: str) -> list[Unit]:
        self._title = None
        self.own_sizes()
        out: list[Unit] = []
        headings: list[tuple[int, str]] = []  # (level, title)
        lines = text.splitlines()
        paragraph = 0
        block: list[tuple[int, str]] = []  # (line number, text) of the paragraph being read
        table: list[tuple[int, list[str]]] = []

        def path() -> tuple[str, ...]:
            return tuple(t for _, t in headings)

        def flush() -> None:
            nonlocal paragraph, block, table
            if block:
                paragraph += 1
                out.extend(self._sentences(block, path(), paragraph))
                block = []
            if table:
                paragraph += 1
                out.extend(self._rows(table, path(), paragraph, lines))
                table = []

        for n, raw in enumerate(lines, 1):
            line = raw.strip()
            m = re.match(r"^(#{1,6})\s+(.*)$", line)
            if m:
                flush()
                level = len(m.group(1))
                if not headings and level == 1 and not out and self._title is None:
                    self._title = _clean(m.group(2))
                    self.own_sizes(self._title)
                headings = [(lv, t) for lv, t in headings if lv < level] + [(level, _clean(m.group(2)))]
                continue
            rows = _html_rows(line) if _HTML_CELL.search(line) else []
            if rows:  # a table as HTML (converted papers keep them): read as a table, row by row
                starts = "<table" in line.lower()
                if block or (starts and table):
                    flush()
                if not table and not starts and not rows[0][1]:
                    table.append((n, [""] * len(rows[0][0])))  # rows without a header: each cell says itself
                table.extend((n, cells) for cells, _ in rows)
                continue
            if line.startswith("|") and line.endswith("|"):
                if block:
                    flush()
                if not re.match(r"^\|[\s:|-]+\|$", line):  # not the separator row
                    table.append((n, [_clean(c) for c in line.strip("|").split("|")]))
                continue
            if not line or line == "[...]":
                flush()
                continue
            if table:
                flush()
            if re.match(r"^(?:[-*•]|\d+[.)])\s+", line):  # a list item is a paragraph of its own
                flush()
                block.append((n, re.sub(r"^(?:[-*•]|\d+[.)])\s+", "", line)))
                flush()
                continue
            block.append((n, line))
        flush()
        return out

    def _sentences(self, block: list[tuple[int, str]], headings: tuple[str, ...], paragraph: int) -> list[Unit]:
        # a paragraph that opens with a bold title ("**Pretraining data** We mix ...") sits under that title too
        first = block[0][1]
        lead = re.match(r"^\*\*([^*]{2,80})\*\*\s*", first)
        if lead:
            headings = headings + (_clean(lead.group(1)),)
        text, starts = "", []
        for n, line in block:
            starts.append((len(text), n))
            text += line + " "
        sections = self.section_kinds(headings)
        out = []
        for s, start in _split(text):
            n = max(ln for off, ln in starts if off <= start)
            u = self.unit(_clean(s), line=n, headings=headings, sections=sections, paragraph=paragraph)
            u.context = " ".join(headings)
            out.append(u)
        return out

    def _rows(self, table: list[tuple[int, list[str]]], headings: tuple[str, ...], paragraph: int,
              lines: list[str]) -> list[Unit]:
        (_, header), rows = table[0], table[1:]
        caption = _caption(lines, table[-1][0])
        sections = self.section_kinds(headings + ((caption,) if caption else ()))
        out = []
        for n, cells in rows:
            text = "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c)
            u = self.unit(text, line=n, headings=headings, sections=sections, kind="row", paragraph=paragraph)
            u.context = " ".join(headings + ((caption,) if caption else ()) + tuple(header))
            u.figures = self._typed_by_header(header, cells) or u.figures
            # a row reads with its table: the caption and the headers say what its cells are
            u.words = u.words + tokens(u.context)
            out.append(u)
        return out

    def _typed_by_header(self, header: list[str], cells: list[str]) -> list[Figure]:
        """A cell's figures, typed by its column's header where the cell alone does not say ("3,860" under
        "tokens (billions)" is tokens)."""
        out = []
        for h, c in zip(header, cells):
            share = bool(h) and ("%" in h or bool(_SHARE_HEADER.search(h)))
            for f in self.figures.read(c):
                if share and f.kind in ("number", "rate", "params", "tokens"):
                    f = Figure("percent", f.text, f.value, f.start, f.end)
                elif f.kind in ("number", "rate", "params") and h:
                    typed = self.figures.read(f"{f.text} {h}")
                    if typed and typed[0].kind not in ("number", "rate"):
                        f = Figure(typed[0].kind, f.text, f.value, f.start, f.end)
                out.append(f)
        return out


_HTML_CELL = re.compile(r"<t[dh][\s>]", re.IGNORECASE)


def _html_rows(line: str) -> list[tuple[list[str], bool]]:
    """The rows of an HTML table's line: each row's cells (tags removed), and whether they are <th> cells."""
    out = []
    for row in re.split(r"</?tr[^>]*>", line, flags=re.IGNORECASE):
        cells = re.findall(r"<t([dh])[^>]*>(.*?)(?=</t[dh]>|<t[dh][\s>]|</?tr|</table|$)", row,
                           flags=re.IGNORECASE | re.DOTALL)
        if cells:
            out.append(([_clean(re.sub(r"<[^>]+>", " ", c)) for _, c in cells],
                        all(k.lower() == "h" for k, _ in cells)))
    return out


_SHARE_HEADER = re.compile(r"\b(?:percent|percentage|share|fraction|proportion|weight|ratio)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'\[])")


def _split(text: str) -> list[tuple[str, int]]:
    """Sentences and where each starts; abbreviations such as "e.g." and "Sec." do not end one."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        before = text[max(0, m.start() - 6):m.start()]
        if re.search(r"(?:\b(?:e\.g|i\.e|et al|Sec|Fig|Tab|Eq|vs|cf|approx|resp|Inc|No)\.|\b[A-Z]\.)$", before):
            continue
        out.append((text[start:m.start()], start))
        start = m.end()
    if text[start:].strip():
        out.append((text[start:], start))
    return [(s, i) for s, i in out if len(s.strip()) >= 3]


def _clean(text: str) -> str:
    return " ".join(re.sub(r"\*\*|__|`", "", text).split())


def _caption(lines: list[str], last_row: int) -> Optional[str]:
    """A table's caption: the line after it (or before) that starts with "Table"."""
    for n in (last_row, last_row + 1):
        if n < len(lines) and re.match(r"^\s*\**Table\s*\d", lines[n]):
            return _clean(lines[n])
    return None
