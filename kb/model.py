"""The record format v1 (see DESIGN.md) and the vocabulary, as pydantic models.

Field names here are the contract: add optional fields, rename none. Unknown fields are rejected so a typo in a
key never drops a figure silently. Values arrive from the loader as the text written in the file (YAML scalars
are not typed by the parser, see kb/load.py); each field's type decides what the text means.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from . import codes
from .problems import shown

# A record id or claim id: lowercase words joined by hyphens, starting with a letter (so that a formula can
# tell an id from a number).
ID = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
SLUG = rf"^{ID}$"
Slug = Annotated[str, Field(pattern=SLUG, max_length=100)]

Status = Literal["confirmed", "secondary", "unverified", "contradicted", "derived"]
Bound = Literal["exact", "about", "at-least", "at-most"]
Verdict = Literal["disclosed", "partial", "absent"]
QuoteKind = Literal["text", "table"]

# Suffixes a written figure may carry: "14.8T", "2.788M", "119K", "37B".
SUFFIXES = {"K": Decimal(10) ** 3, "M": Decimal(10) ** 6, "B": Decimal(10) ** 9, "T": Decimal(10) ** 12}
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_SUFFIXED = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([KMBT])$")

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


def _parse_value(v: Any) -> Any:
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


def _as_number(v: Any) -> Any:
    return None if v is None else parse_number(v)


Value = Annotated[
    Any,
    BeforeValidator(_parse_value),
    WithJsonSchema(
        {
            "description": 'A number, a number with a K/M/B/T suffix ("14.8T"), or a range [low, high].',
            "anyOf": [
                {"type": "number"},
                {"type": "string", "pattern": r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[KMBT]?$"},
                {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 2,
                    "items": {"anyOf": [{"type": "number"}, {"type": "string"}]},
                },
                {"type": "null"},
            ],
        }
    ),
]
PositiveNumber = Annotated[Any, BeforeValidator(_as_number), WithJsonSchema({"type": "number", "minimum": 0})]


def _http_url(v: str) -> str:
    if not re.match(r"^https?://[^\s/$.?#][^\s]*$", v, re.IGNORECASE):
        scheme = v.split(":", 1)[0] if ":" in v else ""
        why = f"the {scheme}: scheme is not allowed" if scheme else "not an absolute URL"
        raise UrlError(f"URL must be http or https ({why}): {shown(v)}")
    return v


HttpUrl = Annotated[str, Field(max_length=2000), AfterValidator(_http_url)]
Text = Annotated[str, Field(min_length=1, max_length=2000)]
LongText = Annotated[str, Field(min_length=1, max_length=10000)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, validate_default=False)


class Source(Strict):
    id: Slug
    title: Text
    url: Optional[HttpUrl] = Field(None, description="http or https only")
    path: Optional[Annotated[str, Field(max_length=300, pattern=r"^[A-Za-z0-9_./-]+$")]] = Field(
        None, description="a file in this repository holding the source, where it has no public URL"
    )
    kind: Literal["primary", "secondary"]
    checked: date = Field(description="the day the link was last opened and found to hold")
    note: Optional[LongText] = None
    # Which text was read: the version (arXiv "v3", a commit SHA, a page's date), the day its text was read, and
    # the sha256 of its normalised text (kb sources fetch), so a later re-check can tell the words moved.
    version: Optional[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        None, description='the version read: arXiv "v3", a commit SHA, or the date a page shows')
    retrieved: Optional[date] = Field(None, description="the day the source's text was read")
    sha256: Optional[Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]] = Field(
        None, description="sha256 of the normalised text read (as kb sources fetch computes it)")

    @model_validator(mode="after")
    def _url_or_path(self) -> "Source":
        if not self.url and not self.path:
            raise UrlError("a source needs a url (or, for a file kept in this repository, a path)")
        if self.path and (self.path.startswith("/") or ".." in self.path.split("/")):
            raise UrlError(f"path must stay inside the repository: {shown(self.path)}")
        return self


class Claim(Strict):
    id: Slug
    statement: Text
    value: Value = None
    bound: Bound = "exact"
    unit: Optional[Annotated[str, Field(max_length=100)]] = None
    source: Optional[Slug] = None
    locator: Optional[Text] = None
    quote: Optional[LongText] = None
    # text: the quote is the source's sentence(s), verbatim; table: a table row, cells as printed joined by " | "
    # (the table named in the locator).
    quote_kind: QuoteKind = "text"
    # Why a checked figure has no verbatim quote (read from a chart or image, say): a confirmed claim needs a
    # quote or this.
    no_quote: Optional[Text] = None
    verified: Optional[date] = None
    status: Status
    note: Optional[LongText] = None
    patterns: list[Slug] = Field(default_factory=list)
    topics: list[Slug] = Field(default_factory=list)
    formula: Optional[Annotated[str, Field(max_length=500)]] = None
    tolerance: Optional[PositiveNumber] = None

    # The figure exactly as written in the file ("2.788M"), for citations.
    _value_text: Optional[str] = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_written_value(cls, data: Any, handler: Any) -> "Claim":
        claim = handler(data)
        if isinstance(data, dict):
            raw = data.get("value")
            if isinstance(raw, (list, tuple)):
                claim._value_text = "–".join(str(x) for x in raw)
            elif raw is not None:
                claim._value_text = str(raw)
        return claim

    @property
    def value_text(self) -> Optional[str]:
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

    @field_validator("patterns", "topics")
    @classmethod
    def _no_repeats(cls, v: list[str]) -> list[str]:
        seen = [x for i, x in enumerate(v) if x in v[:i]]
        if seen:
            raise ValueError(f"listed twice: {', '.join(sorted(set(seen)))}")
        return v


class Disclosure(Strict):
    status: Verdict
    note: Optional[LongText] = None
    claims: list[Slug] = Field(default_factory=list)
    locator: Optional[Text] = None


class Report(Strict):
    id: Slug
    title: Text
    organization: Text
    published: date
    models: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(default_factory=list)
    summary: Optional[LongText] = None
    sources: list[Source] = Field(min_length=1)
    claims: list[Claim] = Field(min_length=1)
    disclosures: dict[Slug, Disclosure] = Field(default_factory=dict)
    unsaid: list[LongText] = Field(default_factory=list)

    def claim(self, claim_id: str) -> Optional[Claim]:
        i = self.claim_index().get(claim_id)
        return None if i is None else self.claims[i]

    def claim_index(self) -> dict[str, int]:
        """Each claim id → its position: the first claim of an id."""
        index: dict[str, int] = {}
        for i, c in enumerate(self.claims):
            index.setdefault(c.id, i)
        return index

    def source(self, source_id: str) -> Optional[Source]:
        return next((s for s in self.sources if s.id == source_id), None)


# The vocabulary file (claims/_vocabulary.yaml).


class Pattern(Strict):
    id: Slug
    title: Text
    description: LongText


Phrase = Annotated[str, Field(min_length=2, max_length=200)]


class SectionCues(Strict):
    """Cues that mention a part only inside a kind of section, next to one of its anchors ("thank ... for the
    compute" in acknowledgements credits people with running the training; elsewhere "thank" says nothing)."""

    cues: list[Phrase] = Field(min_length=1)
    anchors: list[Phrase] = Field(min_length=1)


class OmissionPart(Strict):
    """A part of an omission, and how the auditor recognises it (RUBRIC.md decides what each part means)."""

    id: Slug
    description: Text
    question: Text
    # Phrases (matched as whole, stemmed words) that mention the part; `weak_cues` mention it only in a sentence
    # or claim that also matches one of `anchors` ("thanks" only next to "training" or "cluster").
    cues: list[Phrase] = Field(min_length=1)
    weak_cues: list[Phrase] = Field(default_factory=list)
    anchors: list[Phrase] = Field(default_factory=list)
    # The kinds of figure (the vocabulary's figure_kinds) that give the part: a mention with one of them in the
    # same sentence or claim gives it; without `figures`, a mention gives it.
    figures: list[Slug] = Field(default_factory=list)
    # Kinds of figure that give the part only in a table row (a row of a mixture table gives a source's share in
    # tokens; a sentence's total token count does not).
    row_figures: list[Slug] = Field(default_factory=list)
    # The part counts only in a sentence or claim that also mentions one of these parts (a GPU-hour figure is
    # the cost of failed runs only next to a failed run).
    needs: list[Slug] = Field(default_factory=list)
    # Whether what the part needs may be found nearby (under the same headings, or in the sentence or claim just
    # before) rather than in the same sentence or claim.
    nearby: bool = True
    # A cue that stands in a negation ("no rollbacks", "we did not check"): ignore it, or count it as a mention
    # (an admission is partial), or as a mention of another omission's part ("omission/part"); `only`: the part
    # is mentioned by negated cues only ("no loss spikes" is operations evidence, "loss spikes" alone is not).
    negated: Annotated[str, Field(pattern=r"^(ignore|mention|only|[a-z0-9-]+/[a-z0-9-]+)$")] = "ignore"
    # Cues that count only inside a kind of section (the vocabulary's `sections`), next to that section's anchors.
    in_sections: dict[Slug, SectionCues] = Field(default_factory=dict)
    # Whether a record's derived claim (the knowledge base's arithmetic on the report's figures) gives the part:
    # only where the rubric accepts what follows directly from the report ("two days on 384 GPUs" is a cost).
    from_derived: bool = False
    # Parts of other omissions ("omission/part") that take a sentence or claim from this part when both are
    # mentioned: a filter of benchmark overlaps is the contamination check, not the pretraining data's filtering.
    yields_to: list[Annotated[str, Field(pattern=r"^[a-z0-9-]+/[a-z0-9-]+$")]] = Field(default_factory=list)


# Kinds of figure read by their form, not by the words around them: "12%", "40% more" (a change, not a share),
# "13-gram", "3e-4", several values of one kind in a sentence ("1e-4, 3e-4 and 6e-4"), any other number.
BUILT_IN_FIGURE_KINDS = ("percent", "change", "ngram", "rate", "range", "number")


class Rule(Strict):
    """One way an omission is disclosed: these parts given with figures, these at least mentioned."""

    given: list[Slug] = Field(min_length=1)
    mentioned: list[Slug] = Field(default_factory=list)


class Omission(Strict):
    id: Slug
    title: Text
    description: LongText
    parts: list[OmissionPart] = Field(min_length=1)
    # Phrases that say a text is about this omission at all; where given, a part's cue counts only in a sentence
    # or claim (or under a heading) that also matches an anchor.
    anchors: list[Phrase] = Field(default_factory=list)
    # RUBRIC.md as data: the omission is disclosed when any of these rules holds (default: every part given);
    # partial when any part is mentioned; absent otherwise.
    disclosed: list[Rule] = Field(default_factory=list)
    # Kinds of section (the vocabulary's `sections`) that give no evidence for this omission (fine-tuning data is
    # not pretraining data), and kinds whose evidence is partial at most (acknowledgements).
    out_of_scope: list[Slug] = Field(default_factory=list)
    partial_only: list[Slug] = Field(default_factory=list)
    # Which claims or sentences a verdict names as evidence: every one that mentions a part (`all`, as a reader
    # names every claim that bears on the omission), or, for a part another unit gives, only those that give it
    # too (`given-first`: where mere mentions are mostly words in another sense, "tokens of context").
    evidence: Literal["all", "given-first"] = "all"

    @property
    def rules(self) -> list[Rule]:
        return self.disclosed or [Rule(given=[p.id for p in self.parts])]


class Unit(Strict):
    id: Annotated[str, Field(min_length=1, max_length=100)]
    base: Annotated[str, Field(min_length=1, max_length=100)]
    scale: PositiveNumber = 1
    aliases: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(default_factory=list)
    # The range a figure in this unit can take (counts and sizes at least 0, percent 0 to 100, shares 0 to 1).
    min: Optional[Annotated[Any, BeforeValidator(_as_number)]] = None
    max: Optional[Annotated[Any, BeforeValidator(_as_number)]] = None


class ChartAxis(Strict):
    base: Annotated[str, Field(min_length=1, max_length=100)]
    label: Text
    log: bool = True


class Chart(Strict):
    """A cross-report chart: per report, the claims supporting `pattern` whose units normalize to x.base and
    y.base make a point."""

    id: Slug
    pattern: Slug
    title: Text
    description: Optional[LongText] = None
    x: ChartAxis
    y: ChartAxis


class Vocabulary(Strict):
    version: Literal["1", 1]
    # A check older than this many days is stale: the figure may no longer be cited. The one setting of it: kb
    # cite and check, the build's citable column, the auditor and the site's queries all read it from here.
    stale_after_days: Annotated[int, Field(ge=0)]
    patterns: list[Pattern] = Field(min_length=1)
    omissions: list[Omission] = Field(min_length=1)
    units: list[Unit] = Field(default_factory=list)
    scales: dict[str, PositiveNumber] = Field(default_factory=dict)
    charts: list[Chart] = Field(default_factory=list)
    # Kind of figure → the words that follow a number of that kind ("GPU-hours": compute); `threshold` lists the
    # words that precede one ("at least", "below").
    figure_kinds: dict[Slug, list[Annotated[str, Field(min_length=1, max_length=200)]]] = Field(default_factory=dict)
    # Kind of section → the words of a heading that make a section of that kind (fine-tuning, acknowledgements).
    sections: dict[Slug, list[Phrase]] = Field(default_factory=dict)
    # Kind of section → the words that put one sentence (or a record's claim) in it wherever it stands; narrower
    # than a heading's words ("we adapt" or "aligned with" in a sentence is rarely fine-tuning). A kind not listed
    # here is found in sentences by its heading words.
    sentences: dict[Slug, list[Phrase]] = Field(default_factory=dict)
    # Phrases whose words are never a cue of any part: "the following differences" is not "follows GPT-3".
    not_cues: list[Phrase] = Field(default_factory=list)
    # Names the auditor recognises as such: datasets and corpora, kinds of data.
    gazetteer: dict[Slug, list[Phrase]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> "Vocabulary":
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
                for kind in p.figures:
                    if kind not in self.figure_kinds and kind not in BUILT_IN_FIGURE_KINDS:
                        raise ValueError(f"part {o.id}/{p.id} names an unknown kind of figure {kind!r}")
        return self

    @property
    def pattern_ids(self) -> list[str]:
        return [p.id for p in self.patterns]

    @property
    def omission_ids(self) -> list[str]:
        return [o.id for o in self.omissions]

    def sentence_words(self, kind: str) -> list[str]:
        """The words that put a sentence in a kind of section: its own list, else its headings' words."""
        return self.sentences.get(kind, self.sections.get(kind, []))

    def omission(self, omission_id: str) -> Optional[Omission]:
        return next((o for o in self.omissions if o.id == omission_id), None)


def record_json_schema() -> dict:
    """The JSON Schema of a record, for editors (yaml-language-server) and outside tools."""
    schema = Report.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "record-v1.schema.json",
        "title": "report-claims record, format v1",
        "description": "One training report and its quantified claims. See README.md, 'Record format v1'.",
        **{k: v for k, v in schema.items() if k != "title"},
    }
