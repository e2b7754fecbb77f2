"""What the record format's values mean and how its records behave, without pydantic.

kb.model declares the format as pydantic models and takes from here the parsing of figures and URLs, the checks
its validators run, and the models' methods; kb.compiled makes plain classes with the same methods, validated by
pydantic-core with the schema pydantic built from kb.model. So each rule has one owner here, and the commands
that read one record need not import pydantic's model machinery (kb.compiled says when).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any, Optional, Union

from . import codes
from .problems import shown

# A record id or claim id: lowercase words joined by hyphens, starting with a letter (so that a formula can
# tell an id from a number).
ID = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
SLUG = rf"^{ID}$"

# Suffixes a written figure may carry: "14.8T", "2.788M", "119K", "37B".
SUFFIXES = {"K": Decimal(10) ** 3, "M": Decimal(10) ** 6, "B": Decimal(10) ** 9, "T": Decimal(10) ** 12}
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_SUFFIXED = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([KMBT])$")

# Kinds of figure read by their form, not by the words around them: "12%", "40% more" (a change, not a share),
# "13-gram", "3e-4", several values of one kind in a sentence ("1e-4, 3e-4 and 6e-4"), any other number.
BUILT_IN_FIGURE_KINDS = ("percent", "change", "ngram", "rate", "range", "number")

Number = Union[int, float]


def precision(text: str) -> float:
    """Half a unit of the last digit of a figure as written ("2.788M" → 500.0): how far a reader may round it."""
    s = text.strip()
    m = _SUFFIXED.match(s)
    digits, scale = (m.group(1), float(SUFFIXES[m.group(2)])) if m else (s, 1.0)
    if not _NUMBER.match(digits):
        return 0.0
    mantissa, _, exponent = digits.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals) * scale


class FigureError(ValueError):
    code = codes.NOT_A_FIGURE


class UrlError(ValueError):
    code = codes.BAD_URL


def parse_number(text: Any) -> Number:
    """A figure as written in a record ("419", "3.8e25", "14.8T") as a number, or a clear error.

    Anything whose meaning differs between YAML 1.1 and 1.2, or between readers (thousands separators,
    leading zeros, sexagesimal 12:30, underscores), is rejected rather than guessed.
    """
    if isinstance(text, bool):
        raise FigureError(f"{shown(text)} is a boolean, not a figure")
    if isinstance(text, int):
        return text
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise FigureError("not a finite number")
        return text
    if not isinstance(text, str):
        raise FigureError(f"expected a number, got {type(text).__name__}")
    s = text.strip()
    digits, scale = s, Decimal(1)
    m = _SUFFIXED.match(s)
    if m:
        digits, scale = m.group(1), SUFFIXES[m.group(2)]
    if len(digits) > 100:  # Decimal and int would overflow or crawl on a million digits
        raise FigureError(f"{shown(text)} is not a figure: no figure needs more than 100 characters")
    if not _NUMBER.match(digits):
        hint = ""
        if re.match(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$", s):
            hint = f"; write it without separators ({s.replace(',', '')})"
        elif "_" in s:
            hint = f"; write it without underscores ({s.replace('_', '')})"
        elif re.match(r"^\d+(:\d+)+$", s):
            hint = "; YAML 1.1 reads this as a base-60 number, quote it or write the figure in one unit"
        elif re.match(r"^[+-]?[\d.]+\s*-\s*[\d.]+$", s):
            hint = "; write a range as [low, high]"
        raise FigureError(f"{shown(text)} is not a figure (a number, a number with K/M/B/T, or [low, high]){hint}")
    if re.match(r"^[+-]?0\d", digits):
        raise FigureError(f"{shown(text)} has a leading zero, which YAML 1.1 reads as octal; write it without")
    try:
        d = Decimal(digits) * scale
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise FigureError(f"{shown(text)} is not a number")
    if not d.is_finite() or abs(d) > Decimal("1e300"):
        raise FigureError(f"{shown(text)} is out of range")
    if d == d.to_integral_value() and abs(d) < 10**18 and ("." not in digits and "e" not in digits.lower() or m):
        return int(d)
    return float(d)


# The models' validators (kb.model wires each into its model).


def parse_value(v: Any) -> Any:
    """A claim's figure: a number or a range [low, high] (as a tuple)."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise FigureError(f"a range is [low, high], got {len(v)} items")
        low, high = parse_number(v[0]), parse_number(v[1])
        if low > high:
            raise FigureError(f"range is not ordered: low {low} > high {high}")
        return (low, high)
    return parse_number(v)


def as_number(v: Any) -> Any:
    return None if v is None else parse_number(v)


def http_url(v: str) -> str:
    if not re.match(r"^https?://[^\s/$.?#][^\s]*$", v, re.IGNORECASE):
        scheme = v.split(":", 1)[0] if ":" in v else ""
        why = f"the {scheme}: scheme is not allowed" if scheme else "not an absolute URL"
        raise UrlError(f"URL must be http or https ({why}): {shown(v)}")
    return v


def url_or_path(source: Any) -> Any:
    """A source: it has a url, or a path that stays inside the repository."""
    if not source.url and not source.path:
        raise UrlError("a source needs a url (or, for a file kept in this repository, a path)")
    if source.path and (source.path.startswith("/") or ".." in source.path.split("/")):
        raise UrlError(f"path must stay inside the repository: {shown(source.path)}")
    return source


def keep_written_value(data: Any, handler: Any) -> Any:
    """A claim, keeping its figure as written in the file ("2.788M", "1–2"), for citations."""
    claim = handler(data)
    if isinstance(data, dict):
        raw = data.get("value")
        # into the private store directly: the same as setting claim._value_text on a pydantic model
        if isinstance(raw, (list, tuple)):
            claim.__pydantic_private__["_value_text"] = "–".join(str(x) for x in raw)
        elif raw is not None:
            claim.__pydantic_private__["_value_text"] = str(raw)
    return claim


def no_repeats(v: list[str]) -> list[str]:
    seen = [x for i, x in enumerate(v) if x in v[:i]]
    if seen:
        raise ValueError(f"listed twice: {', '.join(sorted(set(seen)))}")
    return v


def unique_ids(vocabulary: Any) -> Any:
    """A vocabulary: its ids listed once, and every kind of section, figure and part it names is one it has."""
    self = vocabulary
    for kind, items in (("pattern", self.patterns), ("omission", self.omissions), ("unit", self.units)):
        ids = [i.id for i in items]
        dups = sorted({i for i in ids if ids.count(i) > 1})
        if dups:
            raise ValueError(f"{kind} ids listed twice: {', '.join(dups)}")
    for chart in self.charts:
        if chart.pattern not in self.pattern_ids:
            raise ValueError(f"chart {chart.id!r} names an unknown pattern {chart.pattern!r}")
    for kind in self.sentences:
        if kind not in self.sections:
            raise ValueError(f"sentences names a kind of section the vocabulary does not have: {kind!r}")
    for o in self.omissions:
        parts = {p.id for p in o.parts}
        named = {x for r in o.rules for x in (*r.given, *r.mentioned)} | {n for p in o.parts for n in p.needs}
        if named - parts:
            raise ValueError(f"omission {o.id!r} names parts it does not have: {', '.join(sorted(named - parts))}")
        only = named & {p.id for p in o.parts if p.evidence_only}
        if only:
            raise ValueError(f"omission {o.id!r} decides by parts that are evidence only: {', '.join(sorted(only))}")
        for p in o.parts:
            for ref in p.yields_to:
                other, _, part = ref.partition("/")
                theirs = self.omission(other)
                if theirs is None or part not in {x.id for x in theirs.parts}:
                    raise ValueError(f"part {o.id}/{p.id} yields to an unknown part {ref!r}")
        for kind in (*o.out_of_scope, *o.partial_only, *(k for p in o.parts for k in p.in_sections)):
            if kind not in self.sections:
                raise ValueError(f"omission {o.id!r} names a kind of section the vocabulary does not have: {kind!r}")
        for p in o.parts:
            for name in p.weak_gazetteers:
                if name not in self.gazetteer:
                    raise ValueError(f"part {o.id}/{p.id} names a list the gazetteer does not have: {name!r}")
            for kind in p.figures:
                if kind not in self.figure_kinds and kind not in BUILT_IN_FIGURE_KINDS:
                    raise ValueError(f"part {o.id}/{p.id} names an unknown kind of figure {kind!r}")
    return self


# The models' methods.


class ClaimMethods:
    __slots__ = ()

    @property
    def value_text(self) -> Optional[str]:
        """The figure exactly as written in the file ("2.788M"), for citations."""
        # read from pydantic's private store directly: the attribute goes through __getattr__, and a build asks
        # for every claim's figure text several times
        private = self.__pydantic_private__
        return private.get("_value_text") if private is not None else None

    @property
    def is_range(self) -> bool:
        return isinstance(self.value, tuple)

    @property
    def low(self) -> Optional[Number]:
        return self.value[0] if self.is_range else self.value

    @property
    def high(self) -> Optional[Number]:
        return self.value[1] if self.is_range else self.value


class ReportMethods:
    __slots__ = ()

    def claim(self, claim_id: str) -> Any:
        return next((c for c in self.claims if c.id == claim_id), None)

    def claim_index(self) -> dict[str, int]:
        """Each claim id → its position: the first claim of an id."""
        index: dict[str, int] = {}
        for i, c in enumerate(self.claims):
            index.setdefault(c.id, i)
        return index

    def source(self, source_id: str) -> Any:
        return next((s for s in self.sources if s.id == source_id), None)


class OmissionMethods:
    __slots__ = ()
    rule_type: Any  # the Rule model of the same kind (kb.model's or kb.compiled's)

    @property
    def rules(self) -> list:
        return self.disclosed or [self.rule_type(given=[p.id for p in self.parts if not p.evidence_only])]


class VocabularyMethods:
    __slots__ = ()

    @property
    def pattern_ids(self) -> list[str]:
        return [p.id for p in self.patterns]

    @property
    def omission_ids(self) -> list[str]:
        return [o.id for o in self.omissions]

    def sentence_words(self, kind: str) -> list[str]:
        """The words that put a sentence in a kind of section: its own list, else its headings' words."""
        return self.sentences.get(kind, self.sections.get(kind, []))

    def omission(self, omission_id: str) -> Any:
        return next((o for o in self.omissions if o.id == omission_id), None)
