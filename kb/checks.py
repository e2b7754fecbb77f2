"""Records → checked knowledge base: the rules the schema alone cannot state.

Cross-references (ids, sources, vocabulary), dates (none in the future, no check before publication), statuses
(a contradicted claim says what the source says instead), percentages, unit typos, and the arithmetic of
derived claims, recomputed on every run from the formulas.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Protocol, Union

from . import clock
from . import codes as C
from . import formula as F
from . import versions
from .duplicates import Index as ReportIndex, Summary, repeated_claims
from .load import Loaded
from .problems import Problem
from .units import index as unit_index

if TYPE_CHECKING:  # the records and vocabulary may be kb.compiled's classes, with the same fields and methods
    from .model import Claim, Report, Vocabulary

DEFAULT_TOLERANCE = 0.01  # relative; stated figures are rounded
ABOUT_TOLERANCE = 0.05


@dataclass
class DerivedCheck:
    report: str
    claim: str
    formula: str
    computed: Optional[float]
    stated: Optional[str]
    tolerance: float
    ok: bool
    inputs: list[str] = field(default_factory=list)  # "report/claim" of every reference
    error: Optional[str] = None


@dataclass
class Checked:
    """The outcome of the checks: the problems, and what the checks computed along the way."""

    records: list[Loaded]
    problems: list[Problem] = field(default_factory=list)
    derived: dict[tuple[str, str], DerivedCheck] = field(default_factory=dict)
    unnormalized_units: Counter = field(default_factory=Counter)


class Context(Protocol):
    """The rest of the knowledge base, when checking some of its records: what a formula may refer to and what
    a new report may duplicate. `kb.snapshot.SnapshotContext` answers from the last built database."""

    def record(self, report_id: str) -> Optional[Loaded]: ...

    def summaries(self) -> list[Summary]: ...

    def read(self) -> list[Loaded]:
        """The records read so far (those a formula referred to, at least)."""
        ...

    def figures(self, refs: Iterable[str]) -> dict[str, "StoredFigure"]:
        """Of these claim references, those a formula may take as stored without reading the record: plain
        figures (not derived) of records nothing has changed since they were stored."""
        ...


@dataclass(frozen=True)
class StoredFigure:
    """A plain figure of another record as the last build stored it: all a formula that refers to it needs."""

    value_text: Optional[str]
    low: Optional[float]
    high: Optional[float]

    @property
    def is_range(self) -> bool:
        return self.low != self.high or "–" in (self.value_text or "")  # a range is written low–high


class RecordsContext:
    """A context of records already in memory."""

    def __init__(self, records: Iterable[Loaded] = ()):
        self.records = list(records)
        self.by_id = {rec.report.id: rec for rec in self.records}

    def record(self, report_id: str) -> Optional[Loaded]:
        return self.by_id.get(report_id)

    def summaries(self) -> list[Summary]:
        return [rec.summary() for rec in self.records]

    def read(self) -> list[Loaded]:
        return self.records

    def figures(self, refs: Iterable[str]) -> dict[str, StoredFigure]:
        return {}  # the records are in memory already


def check(
    records: list[Loaded],
    vocabulary: Vocabulary,
    today: Optional[date] = None,
    context: Optional[Context] = None,
    alike: bool = True,
) -> Checked:
    """Check records against each other, the vocabulary and today's date.

    `context` finds records that formulas may refer to but that are not themselves reported on (the knowledge
    base, when validating a single new file). `alike`: warn of reports that look like others and of claims that
    repeat others (`audit` says which reports are alike itself, and reports errors only)."""
    context = context if context is not None else RecordsContext()
    today = clock.today(today)
    out = Checked(records)
    units = unit_index(vocabulary)
    patterns, omissions = set(vocabulary.pattern_ids), set(vocabulary.omission_ids)

    seen_ids: dict[str, Loaded] = {}
    for rec in records:
        r = rec.report
        if r.id in seen_ids:
            out.problems.append(rec.problem(C.DUPLICATE_REPORT, f"report id {r.id!r} is also used by {seen_ids[r.id].path}", "id"))
        seen_ids.setdefault(r.id, rec)
        out.problems += _check_record(rec, patterns, omissions, units, today, out.unnormalized_units)

    _check_derived(records, lambda report_id: seen_ids.get(report_id) or context.record(report_id), out,
                   lambda refs: context.figures([r for r in refs if r.rpartition("/")[0] not in seen_ids]))
    if alike:
        out.problems += near_duplicates(records, context.summaries())
    salvaged = {rec.path: rec for rec in records if rec.salvaged}
    if salvaged:  # what the checks say of the stand-ins of values already reported is not news
        out.problems = [p for p in out.problems if p.path not in salvaged or not salvaged[p.path].hides(p)]
    return out


def near_duplicates(records: list[Loaded], context: list[Summary]) -> list[Problem]:
    """Warnings for a report that looks like another (kb.duplicates) and for a claim that repeats another claim
    of the same report."""
    problems: list[Problem] = []
    own = {r.report.id for r in records}
    index = ReportIndex([rec.summary() for rec in records] + [s for s in context if s.id not in own])
    for rec in records:
        r = rec.report
        for m in index.alike(r.title, r.organization, r.models):
            o = m.other
            if o.path == rec.path:
                continue
            problems.append(rec.problem(C.LOOKS_LIKE, f"looks like {o.id} ({o.path}:{o.title_line}): {m.why}",
                                        "title", severity="warning"))
        for i, j, score in repeated_claims(r.claims):
            a, b = r.claims[i], r.claims[j]
            line = rec.where("claims", j, "id")[0]
            problems.append(rec.problem(C.REPEATED_CLAIM, f"claim {a.id!r} repeats claim {b.id!r} (line {line}): "
                                        f"same figure, statements {score:.0f}% alike", "claims", i, "id",
                                        severity="warning"))
    return problems


def _check_record(rec: Loaded, patterns, omissions, units, today: date, unnormalized: Counter) -> list[Problem]:
    r: Report = rec.report
    problems: list[Problem] = []
    add = problems.append

    stem = Path(rec.path).stem
    if r.id != stem:
        add(rec.problem(C.ID_NOT_FILE_NAME, f"id {r.id!r} must equal the file name {stem!r}", "id"))

    if r.published > today:
        add(rec.problem(C.FUTURE_DATE, f"published {r.published} is in the future", "published"))

    source_ids: dict[str, int] = {}
    for i, s in enumerate(r.sources):
        if s.id in source_ids:
            line = rec.where("sources", source_ids[s.id], "id")[0]
            add(rec.problem(C.DUPLICATE_SOURCE, f"source id {s.id!r} is used twice (first at line {line})", "sources", i, "id"))
        source_ids.setdefault(s.id, i)
        problems += _dates(rec, s.checked, r.published, today, "checked", ("sources", i, "checked"))
        problems += _source_version(rec, i, s)
        if s.retrieved is not None:
            problems += _dates(rec, s.retrieved, r.published, today, "retrieved", ("sources", i, "retrieved"))

    claim_ids: dict[str, int] = {}
    for i, c in enumerate(r.claims):
        at = ("claims", i)
        if c.id in claim_ids:
            line = rec.where("claims", claim_ids[c.id], "id")[0]
            add(rec.problem(C.DUPLICATE_CLAIM, f"claim id {c.id!r} is used twice (first at line {line})", *at, "id"))
        claim_ids.setdefault(c.id, i)

        if c.source is not None and c.source not in source_ids:
            known = ", ".join(source_ids) or "none"
            add(rec.problem(C.UNDEFINED_SOURCE, f"source {c.source!r} is not defined in sources (defined: {known})", *at, "source"))
        if c.status == "derived":
            if not c.formula:
                add(rec.problem(C.DERIVED_WITHOUT_FORMULA, "a derived claim needs a formula", *at, "formula"))
            if c.value is None:
                add(rec.problem(C.DERIVED_WITHOUT_VALUE, "a derived claim needs a stated value to check the formula against", *at, "value"))
        else:
            if c.formula:
                add(rec.problem(C.FORMULA_NOT_DERIVED, f"a formula is only for derived claims (status is {c.status!r})", *at, "formula"))
            if c.source is None:
                add(rec.problem(C.NO_SOURCE, "no source: a claim that is not derived should name one of the sources",
                                *at, "status", severity="warning"))
            if c.verified is None and c.status != "unverified":
                add(rec.problem(C.NO_CHECK_DATE, f"no check date (verified): a {c.status} claim needs the day its figure was checked "
                                f"against the source (only an unverified claim may have none)", *at, "status"))
        if c.quote and c.quote_kind != "table" and c.quote.count(" | ") >= 2:
            add(rec.problem(C.TABLE_ROW_QUOTE, "this quote is a table row: mark it quote_kind: table (and name the "
                            "table in the locator), so a reader knows the words are cells, not a sentence",
                            *at, "quote", severity="warning"))
        if c.status == "confirmed" and not c.quote and not c.no_quote:
            add(rec.problem(C.NO_QUOTE, "a confirmed claim needs the source's words (quote), or why it has none "
                            "(no_quote: read from a chart, say)", *at, "status", severity="warning"))
        if c.status == "contradicted" and not c.note:
            add(rec.problem(C.CONTRADICTED_WITHOUT_NOTE, "a contradicted claim needs a note saying what the source says instead", *at, "status"))
        if c.verified is not None:
            problems += _dates(rec, c.verified, r.published, today, "verified", at + ("verified",))

        for j, p in enumerate(c.patterns):
            if p not in patterns:
                add(rec.problem(C.UNKNOWN_PATTERN, f"unknown pattern {p!r} (known: {', '.join(sorted(patterns))})", *at, "patterns", j))
        for j, t in enumerate(c.topics):
            if t not in omissions:
                add(rec.problem(C.UNKNOWN_OMISSION, f"unknown omission {t!r} (known: {', '.join(sorted(omissions))})", *at, "topics", j))

        if c.unit:
            norm = units.normalize(c.unit)
            if norm is None:
                typo = units.likely_typo(c.unit)
                if typo:
                    add(rec.problem(C.UNIT_TYPO, f"unit {c.unit!r} looks like a typo of {typo!r}", *at, "unit"))
                else:
                    unnormalized[c.unit] += 1
            elif c.value is not None:
                for v in (c.low, c.high):
                    why = norm.outside(v)
                    if why:
                        add(rec.problem(C.OUT_OF_RANGE, f"{c.value_text} {c.unit} is impossible: {why}", *at, "value"))
                        break

    for key, d in r.disclosures.items():
        if key not in omissions:
            add(rec.problem(C.UNKNOWN_OMISSION, f"unknown omission {key!r} (known: {', '.join(sorted(omissions))})",
                            "disclosures", key, key=True))
        for j, cid in enumerate(d.claims):
            if cid not in claim_ids:
                add(rec.problem(C.DISCLOSURE_CLAIM, f"claim {cid!r} is not in this record", "disclosures", key, "claims", j))
    return problems


def _source_version(rec: Loaded, i: int, s) -> list[Problem]:
    """A source's version against what its URL pins (arXiv vN, a GitHub commit), and its text digest against the
    day the text was read: a re-check compares the text read then with the text now."""
    out = []
    at = ("sources", i, "version")
    paper = versions.arxiv(s.url)
    if paper and s.version is not None:
        if not versions.ARXIV_VERSION.match(s.version):
            out.append(rec.problem(C.VERSION_FORM, f"an arXiv source's version is written vN (the version read, such "
                                   f"as v3), not {s.version!r}", *at))
        elif paper.version and s.version != paper.version:
            out.append(rec.problem(C.VERSION_MISMATCH, f"version {s.version!r} differs from the version the URL "
                                   f"points at ({paper.version}): give the version read in both", *at))
    commit = versions.github_commit(s.url)
    if commit and s.version is not None and versions.is_commit(s.version) and not versions.same_commit(commit, s.version):
        out.append(rec.problem(C.VERSION_MISMATCH, f"version {s.version!r} is another commit than the one the URL "
                               f"points at ({commit})", *at))
    if s.sha256 is not None and s.retrieved is None:
        out.append(rec.problem(C.VERSION_FORM, "a sha256 says which text was read: give the day it was read too "
                               "(retrieved)", "sources", i, "sha256"))
    return out


def _dates(rec: Loaded, when: date, published: date, today: date, name: str, loc: tuple) -> list[Problem]:
    if when > today:
        return [rec.problem(C.FUTURE_DATE, f"{name} {when} is in the future", *loc)]
    if when < published:
        return [rec.problem(C.BEFORE_PUBLICATION, f"{name} {when} is before the report was published ({published})", *loc)]
    return []


# Derived claims.


def tolerance_of(c: Claim) -> float:
    if c.tolerance is not None:
        return float(c.tolerance)
    return ABOUT_TOLERANCE if c.bound == "about" else DEFAULT_TOLERANCE


def within(computed: float, c: Claim, tol: float) -> bool:
    """Whether a computed figure agrees with the claim's stated value, bound and relative tolerance."""
    low, high = float(c.low), float(c.high)
    slack_low, slack_high = tol * abs(low), tol * abs(high)
    if low == high == 0:
        slack_low = slack_high = tol
    if c.bound == "at-least" and not c.is_range:
        return computed >= low - slack_low
    if c.bound == "at-most" and not c.is_range:
        return computed <= high + slack_high
    return low - slack_low <= computed <= high + slack_high


def _check_derived(records: list[Loaded], find, out: Checked, stored=None) -> None:
    """Check every formula of the records: its references resolve (`find`: a record by report id), it has no
    cycle, and it adds up. `stored`: references → StoredFigure for those the context has without reading their
    record (a one-record command with a built database); the same problems either way."""
    parsed: dict[tuple[str, str], F.Node] = {}
    results: dict[tuple[str, str], Optional[float]] = {}
    state: dict[tuple[str, str], str] = {}  # visiting | done
    own = {id(r) for r in records}  # problems are reported for these records only, not for the context

    # each record's claims by id, made once (a formula's inputs were looked for claim by claim: 100,000 times at
    # 100,000 claims); the record is kept with them, so that its id stays its own
    indexes: dict[int, tuple[Loaded, dict[str, int]]] = {}

    def claims_of(rec: Loaded) -> dict[str, int]:
        known = indexes.get(id(rec))
        if known is None or known[0] is not rec:
            known = indexes[id(rec)] = (rec, rec.report.claim_index())
        return known[1]

    def locate(rec: Loaded, claim_id: str) -> tuple[int, Claim]:
        i = claims_of(rec)[claim_id]
        return i, rec.report.claims[i]

    def resolve(rec: Loaded, ref: str) -> tuple[Loaded, Claim]:
        report_id, _, claim_id = ref.rpartition("/")
        target = find(report_id) if report_id else rec
        if target is None:
            raise F.FormulaError(f"{ref!r}: no report {report_id!r} in the knowledge base")
        i = claims_of(target).get(claim_id)
        if i is None:
            where = f"report {report_id!r}" if report_id else "this record"
            raise F.FormulaError(f"{ref!r}: no claim {claim_id!r} in {where}")
        return target, target.report.claims[i]

    def compute(rec: Loaded, c: Claim, chain: list[str]) -> Optional[float]:
        key = (rec.report.id, c.id)
        if state.get(key) == "done":
            return results[key]
        if state.get(key) == "visiting":
            cycle = " → ".join(chain[chain.index(f"{key[0]}/{key[1]}"):] + [f"{key[0]}/{key[1]}"])
            raise _Cycle(cycle)
        state[key] = "visiting"
        chain = chain + [f"{key[0]}/{key[1]}"]
        i, _ = locate(rec, c.id)
        loc = ("claims", i, "formula")
        value: Optional[float] = None
        check = DerivedCheck(rec.report.id, c.id, c.formula or "", None, c.value_text, tolerance_of(c), False)
        try:
            node = parsed.get(key) or F.parse(c.formula or "")
            parsed[key] = node

            def lookup(ref: str) -> float:
                figure = figures.get(ref)
                if figure is not None:
                    if figure.low is None:
                        raise F.FormulaError(f"{ref!r} has no figure")
                    if figure.is_range:
                        raise F.FormulaError(f"{ref!r} is a range; a formula needs a single figure")
                    return figure.low
                target, tc = resolve(rec, ref)
                if tc.status == "derived" and tc.formula:
                    v = compute(target, tc, chain)
                    if v is None:
                        raise F.FormulaError(f"{ref!r} could not be computed")
                    return v
                if tc.value is None:
                    i = next(i for i, x in enumerate(target.report.claims) if x is tc)
                    if {("claims", i), ("claims", i, "value")} & target.salvaged:
                        raise _Unknown(f"{ref!r} has no valid figure")  # reported where the figure is
                    raise F.FormulaError(f"{ref!r} has no figure")
                if tc.is_range:
                    raise F.FormulaError(f"{ref!r} is a range; a formula needs a single figure")
                return float(tc.value)

            check.inputs = [r if "/" in r else f"{rec.report.id}/{r}" for r in F.references(node)]
            value = F.evaluate(node, lookup)
            check.computed = value
            if c.value is not None:
                check.ok = within(value, c, check.tolerance)
                if not check.ok and id(rec) in own:
                    out.problems.append(rec.problem(
                        C.DOES_NOT_ADD_UP, f"derived figure does not add up: {c.formula} = {_fmt(value)}, but the claim states "
                        f"{c.value_text} ({c.bound}, tolerance {check.tolerance:g})", *loc))
        except _Cycle as cyc:
            check.error = f"formula cycle: {cyc}"
            if id(rec) in own:
                out.problems.append(rec.problem(C.FORMULA_CYCLE, check.error, *loc))
            state[key] = "done"
            results[key] = None
            out.derived[key] = check
            raise
        except F.FormulaError as e:
            check.error = str(e)
            if id(rec) in own and not isinstance(e, _Unknown):
                out.problems.append(rec.problem(C.FORMULA, f"formula {c.formula!r}: {e}", *loc))
        state[key] = "done"
        results[key] = value
        out.derived[key] = check
        return value

    targets = [(rec, c) for rec in records for c in rec.report.claims if c.formula]
    figures: dict[str, StoredFigure] = {}
    if stored is not None:
        refs = set()
        for rec, c in targets:
            try:
                node = parsed[(rec.report.id, c.id)] = F.parse(c.formula or "")
            except F.FormulaError:
                continue  # reported when the claim is computed
            refs.update(r for r in F.references(node) if "/" in r)
        figures = stored(refs) if refs else {}
    for rec, c in targets:
        try:
            compute(rec, c, [])
        except _Cycle:
            pass


class _Cycle(Exception):
    pass


class _Unknown(F.FormulaError):
    """An input whose figure was not valid: its own problem is reported, the formula's is not."""


def _fmt(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return f"{x:.6g}"
    return f"{x:.4g}"
