"""The record format v1 (see DESIGN.md) and the vocabulary, as pydantic models.

Field names here are the contract: add optional fields, rename none. Unknown fields are rejected so a typo in a
key never drops a figure silently. Values arrive from the loader as the text written in the file (YAML scalars
are not typed by the parser, see kb/load.py); each field's type decides what the text means.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, ClassVar, Literal, Optional

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

# what a value means, the validators' checks and the models' methods live in kb.values (no pydantic there);
# these names are kb.model's too
from .values import (  # noqa: F401
    BUILT_IN_FIGURE_KINDS,
    ID,
    SLUG,
    SUFFIXES,
    ClaimMethods,
    FigureError,
    Number,
    OmissionMethods,
    ReportMethods,
    UrlError,
    VocabularyMethods,
    as_number,
    http_url,
    keep_written_value,
    no_repeats,
    parse_number,
    parse_value,
    precision,
    unique_ids,
    url_or_path,
)

Slug = Annotated[str, Field(pattern=SLUG, max_length=100)]

Status = Literal["confirmed", "secondary", "unverified", "contradicted", "derived"]
Bound = Literal["exact", "about", "at-least", "at-most"]
Verdict = Literal["disclosed", "partial", "absent"]
QuoteKind = Literal["text", "table"]


Value = Annotated[
    Any,
    BeforeValidator(parse_value),
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
PositiveNumber = Annotated[Any, BeforeValidator(as_number), WithJsonSchema({"type": "number", "minimum": 0})]


HttpUrl = Annotated[str, Field(max_length=2000), AfterValidator(http_url)]
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

    _url_or_path = model_validator(mode="after")(url_or_path)


class Claim(Strict, ClaimMethods):
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

    # The figure exactly as written in the file ("2.788M"), for citations (value_text).
    _value_text: Optional[str] = PrivateAttr(default=None)

    _keep_written_value = model_validator(mode="wrap")(keep_written_value)
    _no_repeats = field_validator("patterns", "topics")(no_repeats)


class Disclosure(Strict):
    status: Verdict
    note: Optional[LongText] = None
    claims: list[Slug] = Field(default_factory=list)
    locator: Optional[Text] = None


class Report(Strict, ReportMethods):
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
    # Phrases that keep the weak cues from counting in a sentence or claim where one of them stands: a run
    # "restarted from the latest checkpoint" resumed after an interruption, which RUBRIC.md puts in operations.
    weak_not_with: list[Phrase] = Field(default_factory=list)
    # Lists of the vocabulary's `gazetteer` whose names are weak cues too (the datasets' names have one list).
    weak_gazetteers: list[Slug] = Field(default_factory=list)
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
    # A part that is evidence only where the omission is addressed otherwise, and alone addresses nothing
    # (RUBRIC.md: data-filtering is absent with "nothing beyond its size", yet a reader cites the size): it
    # decides no level, and is cited only where a unit gives it.
    evidence_only: bool = False


class Rule(Strict):
    """One way an omission is disclosed: these parts given with figures, these at least mentioned."""

    given: list[Slug] = Field(min_length=1)
    mentioned: list[Slug] = Field(default_factory=list)


class Omission(Strict, OmissionMethods):
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

    rule_type: ClassVar[type] = Rule  # what OmissionMethods.rules makes


class Unit(Strict):
    id: Annotated[str, Field(min_length=1, max_length=100)]
    base: Annotated[str, Field(min_length=1, max_length=100)]
    scale: PositiveNumber = 1
    aliases: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(default_factory=list)
    # The range a figure in this unit can take (counts and sizes at least 0, percent 0 to 100, shares 0 to 1).
    min: Optional[Annotated[Any, BeforeValidator(as_number)]] = None
    max: Optional[Annotated[Any, BeforeValidator(as_number)]] = None


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


class Vocabulary(Strict, VocabularyMethods):
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

    _unique_ids = model_validator(mode="after")(unique_ids)


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
