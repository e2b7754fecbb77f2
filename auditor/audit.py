"""The auditor: for a report (a record in format v1, or the report's text), a graded verdict on each omission of
the vocabulary, with the rubric rule it applied and its evidence, what is still missing; hygiene findings; and
the knowledge base's context.

How a verdict is decided (auditor.units reads the report into units, auditor.rules applies RUBRIC.md as the
vocabulary states it: kb/vocabulary.yaml's omissions, figure kinds, sections and gazetteer):

- a record is read claim by claim (statement and quote, the figure typed by its unit, the locator; a derived claim,
  the knowledge base's arithmetic, gives only a part marked `from_derived`; a contradicted one nothing); a text
  sentence by sentence under its headings, a table row by row with its column headers;
- a part of an omission is mentioned by a unit that matches one of its cues as whole words, in scope (fine-tuning
  sections give no pretraining-data or search evidence) and not negated in its clause (or, where the rubric says
  an admission counts, negated); given when the unit also carries a figure of a kind the part takes;
- disclosed when one of the omission's rules holds, partial when any part is mentioned, absent otherwise.

A record's `topics` and `disclosures` are never read as evidence: the auditor would read the answer. The
declared judgements are compared with the verdicts afterwards (findings).

The auditor depends on kb (the records, checks, vocabulary); kb never imports it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Union

from kb import clock, codes
from kb.duplicates import Index as ReportIndex, Summary
from kb.load import load_vocabulary, record_files, vocabulary_path
from kb.pipeline import Validation, validate_files, validate_kb
from kb.problems import Problem
from kb.snapshot import Snapshot, open_snapshot, relative_name
from kb.yaml12 import YamlError, read_text

from .rules import LEVELS, Dropped, Hit, Rulebook
from .units import Reader, Unit

if TYPE_CHECKING:  # the records and vocabulary may be kb.compiled's classes, with the same fields and methods
    from kb.model import Claim, Omission, Report, Vocabulary

MAX_EVIDENCE = 40  # per verdict (text output shows the first few)
PROVIDER = "audit"  # the name this auditor's verdicts are stored under (its entry point, pyproject.toml)


TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text"}
RECORD_SUFFIXES = {".yaml", ".yml"}
PDF_SUFFIXES = {".pdf"}
MAX_TEXT_BYTES = 20 * 1024 * 1024


class InputError(Exception):
    """An input that cannot be read at all: the audit exits 2."""

    def __init__(self, message: str, problems: Optional[list[Problem]] = None):
        super().__init__(message)
        self.problems = problems or []


@dataclass
class Evidence:
    part: str
    cue: str
    score: float  # 100: cues match as whole words (the JSON shape keeps the field)
    figure: bool  # whether this evidence carries a figure of a kind the part takes
    claim: Optional[str] = None  # report/claim, for a record
    sentence: Optional[str] = None  # for a text
    line: Optional[int] = None
    value: Optional[str] = None  # the figure as written
    kind: Optional[str] = None  # its kind (compute, percent, ngram, ...)
    parts: list[dict] = field(default_factory=list)  # every part this unit gives or mentions: {part, cue, value?, kind?}
    admission: bool = False  # the unit admits the part was not done ("we did not run a check"): partial evidence
    limited: Optional[str] = None  # the kind of section that makes it a mention at most (acknowledgements, fine-tuning)


@dataclass
class Verdict:
    omission: str
    status: str  # disclosed | partial | absent
    evidence: list[Evidence] = field(default_factory=list)
    given: list[str] = field(default_factory=list)  # parts given with figures
    mentioned: list[str] = field(default_factory=list)  # parts mentioned without figures
    missing: list[dict] = field(default_factory=list)  # {"part", "question"} for parts not given
    declared: Optional[str] = None
    cohort: Optional[dict] = None
    rule: str = ""  # the rubric rule that decided


@dataclass
class Finding:
    kind: str  # no-source, no-check-date, stale, secondary-only, unverified, derived-mismatch, contradicted,
    #            declared-unsupported, evidence-ignored, similar-report, check
    message: str
    claim: Optional[str] = None
    line: Optional[int] = None
    omission: Optional[str] = None


@dataclass
class Audit:
    file: str
    input: str  # record | text
    report: str
    title: str
    verdicts: dict[str, Verdict]
    findings: list[Finding] = field(default_factory=list)
    similar: list[dict] = field(default_factory=list)
    explained: Optional["Explanation"] = None  # with --explain: the units read and why some gave nothing

    def worst(self) -> int:
        return min((LEVELS[v.status] for v in self.verdicts.values()), default=2)

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "input": self.input,
            "report": self.report,
            "title": self.title,
            "omissions": {
                k: {
                    "status": v.status,
                    "rule": v.rule,
                    "declared": v.declared,
                    "given": v.given,
                    "mentioned": v.mentioned,
                    "missing": v.missing,
                    "evidence": [{k2: v2 for k2, v2 in asdict(e).items() if v2 is not None} for e in v.evidence],
                    "cohort": v.cohort,
                }
                for k, v in self.verdicts.items()
            },
            "findings": [{k: v for k, v in asdict(f).items() if v is not None} for f in self.findings],
            "similar": self.similar,
            **({"explain": self.explained.as_dict()} if self.explained else {}),
        }


@dataclass
class Explanation:
    """What --explain shows besides the evidence: how many units were read, and each unit that had a cue of an
    omission's part but gave no evidence, with why (out of scope, negated, what a part needs not nearby)."""

    units: int = 0
    dropped: list[Dropped] = field(default_factory=list)

    def for_omission(self, omission: str) -> list[Dropped]:
        return [d for d in self.dropped if d.omission == omission]

    def as_dict(self) -> dict:
        return {"units": self.units, "dropped": [
            {"omission": d.omission, **({"claim": d.unit.claim} if d.unit.claim else {"line": d.unit.line,
             "sentence": d.unit.text[:600]}), "why": d.why} for d in self.dropped]}


# Deciding.


class Auditor:
    """Units → evidence → verdicts, for one vocabulary."""

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self.reader = Reader(vocabulary)
        self.rules = Rulebook(vocabulary)

    def record(self, report: Report, where=None, explain: Optional[Explanation] = None) -> dict[str, Verdict]:
        return self.verdicts(self.reader.claims(report, where), explain)

    def text(self, text: str, explain: Optional[Explanation] = None) -> dict[str, Verdict]:
        return self.verdicts(self.reader.text(text), explain)

    def verdicts(self, units: list[Unit], explain: Optional[Explanation] = None) -> dict[str, Verdict]:
        return {o.id: Verdict(o.id, d.status, [_evidence(hs) for hs in evidence], d.given, d.mentioned, missing,
                              rule=d.rule)
                for o, d, evidence, missing in self._decided(units, explain)}

    def stored(self, report: Report) -> Iterator[tuple[str, str, list[str], list[dict]]]:
        """A record's verdicts as a build stores them, for each omission: its status, the claims its evidence names
        and the parts missing; the evidence's details (cues, figures, parts) are not made."""
        for o, d, evidence, missing in self._decided(self.reader.claims(report)):
            yield o.id, d.status, [hs[0].unit.claim for hs in evidence if hs[0].unit.claim], missing

    def _decided(self, units: list[Unit], explain: Optional[Explanation] = None):
        """For each omission: its decision, the hits of each unit its evidence names (in order), the parts missing."""
        if explain is not None:
            explain.units = len(units)
        hits = self.rules.hits(units, explain.dropped if explain is not None else None)
        for o in self.vocabulary.omissions:
            mine = [h for h in hits if h.omission == o.id]
            supporting = {p.id for p in o.parts if p.evidence_only}
            d = self.rules.decide(o, [h for h in mine if h.part not in supporting])
            # for a partial verdict what the nearest disclosed rule lacks, for an absent one every part's question
            # but those that only another way to disclosed names (Rulebook.alternatives)
            alternatives = self.rules.alternatives[o.id]
            missing = [{"part": p.id, "question": p.question} for p in o.parts if not p.evidence_only
                       and (p.id in d.lacks if d.status == "partial" else d.status == "absent"
                            and p.id not in alternatives)]
            # one piece of evidence per claim or sentence, naming every part it gives (a figure first), the
            # units that give a part first; a mere mention of a part another unit gives, as the omission says;
            # a part that is evidence only, where the verdict is not absent and the unit gives it
            by_unit: dict[int, list[Hit]] = {}
            for h in mine:
                if h.part in supporting and (not h.given or d.status == "absent"):
                    continue
                if h.given or o.evidence == "all" or h.part not in d.given:
                    by_unit.setdefault(id(h.unit), []).append(h)
            cited = sorted(by_unit.values(), key=lambda hs: (not any(h.given for h in hs),
                                                              not any(h.figure for h in hs), hs[0].unit.line or 0))
            yield o, d, cited[:MAX_EVIDENCE], missing


def _evidence(hits: list[Hit]) -> Evidence:
    """One unit's evidence: its most telling part (given with a figure, then given, then mentioned) leads."""
    hits = sorted(hits, key=lambda h: (not h.given, h.figure is None))
    h, u = hits[0], hits[0].unit
    parts, seen = [], set()
    for x in hits:
        if x.part in seen:
            continue
        seen.add(x.part)
        parts.append({"part": x.part, "cue": x.cue, "given": x.given,
                      **({"value": x.figure.label, "kind": x.figure.kind} if x.figure else {})})
    return Evidence(h.part, h.cue, 100.0, h.figure is not None, claim=u.claim,
                    sentence=None if u.claim else u.text[:600], line=u.line,
                    value=h.figure.label if h.figure else None, kind=h.figure.kind if h.figure else None,
                    parts=parts, admission=all(x.admission for x in hits), limited=h.limited or None)


# Hygiene and declarations.


# The checks' problems that are hygiene findings of a record, by code: the checks decide, the auditor reports.
HYGIENE = {codes.NO_SOURCE: "no-source", codes.NO_CHECK_DATE: "no-check-date", codes.DOES_NOT_ADD_UP: "derived-mismatch",
           codes.FORMULA: "derived-mismatch", codes.FORMULA_CYCLE: "derived-mismatch"}


def hygiene(rec, validation: Validation, today: date, max_age: int) -> list[Finding]:
    r: Report = rec.report
    out: list[Finding] = []
    for p in validation.problems:
        if p.code in HYGIENE and p.path == rec.path:
            index = int(p.field.split(".")[1]) if p.field and p.field.startswith("claims.") else None
            ref = f"{r.id}/{r.claims[index].id}" if index is not None else None
            out.append(Finding(HYGIENE[p.code], p.message, ref, p.line))
    for i, c in enumerate(r.claims):
        ref = f"{r.id}/{c.id}"
        line = rec.where("claims", i)[0]
        if c.status != "derived" and c.verified is not None and (today - c.verified).days > max_age:
            out.append(Finding("stale", f"checked {(today - c.verified).days} days ago (limit {max_age})", ref, line))
        src = r.source(c.source) if c.source else None
        if c.status == "secondary" or (src is not None and src.kind == "secondary" and c.status == "confirmed"):
            out.append(Finding("secondary-only", "the figure rests on secondary reporting, not the original",
                               ref, line))
        if c.status == "unverified":
            out.append(Finding("unverified", "the figure is stated but not confirmed", ref, line))
        if c.status == "contradicted":
            out.append(Finding("contradicted", f"the source says otherwise: {c.note or ''}".strip(), ref, line))
    return out


def compare_declared(rec, found: dict[str, Verdict]) -> list[Finding]:
    """Flag declarations the evidence does not support, and evidence a declaration ignores."""
    r: Report = rec.report
    out: list[Finding] = []
    for omission, v in found.items():
        d = r.disclosures.get(omission)
        if d is None:
            continue
        v.declared = d.status
        line = rec.where("disclosures", omission, key=True)[0]
        if LEVELS[d.status] > LEVELS[v.status]:
            out.append(Finding("declared-unsupported",
                               f"declared {d.status}, but the evidence supports {v.status}"
                               + (f" (missing: {', '.join(m['part'] for m in v.missing)})" if v.missing else ""),
                               line=line, omission=omission))
        elif LEVELS[d.status] < LEVELS[v.status]:
            refs = sorted({e.claim for e in v.evidence if e.claim})
            out.append(Finding("evidence-ignored",
                               f"declared {d.status}, but the claims give {v.status} evidence: {', '.join(refs)}",
                               line=line, omission=omission))
        evidence_claims = {e.claim for e in v.evidence}
        for cid in d.claims:
            if f"{r.id}/{cid}" not in evidence_claims:
                out.append(Finding("declared-unsupported",
                                   f"declared evidence {cid!r} says nothing the auditor recognises about {omission}",
                                   claim=f"{r.id}/{cid}", line=line, omission=omission))
    return out


# The knowledge base as context.


@dataclass
class KnowledgeBase:
    vocabulary: Vocabulary
    snapshot: Optional[Snapshot]  # the last built database, when it indexes the knowledge base as it is
    verdicts: dict[str, dict[str, str]]  # report → omission → status (declared, else audited), read here
    reports: dict[str, Summary]
    paths: dict[str, str]
    # (omission, status) → how many reports have it, of those the snapshot holds (and `verdicts` does not)
    stored: dict[tuple[str, str], int] = field(default_factory=dict)
    _own: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)  # a report's stored

    @classmethod
    def load(cls, claims_dir: Union[str, Path, None], db: Union[str, Path, None] = None) -> "KnowledgeBase":
        """The knowledge base's reports and verdicts: from the database `db` for the files unchanged since it
        was built (kb.snapshot), audited here for the others; all audited here when there is no such database.
        Without a knowledge base (claims_dir None), an empty one with the packaged vocabulary."""
        if claims_dir is None or not Path(claims_dir).is_dir():
            return cls(load_vocabulary(vocabulary_path(claims_dir)), None, {}, {}, {})
        snapshot = open_snapshot(claims_dir, db, validators=True)  # it lists the record files: not listed twice
        # with the validators the database keeps, where it has them (kb.compiled)
        vocabulary = load_vocabulary(vocabulary_path(claims_dir), snapshot.compiled if snapshot else None)
        if not (snapshot.now if snapshot is not None else record_files(claims_dir)):
            return cls(vocabulary, None, {}, {}, {})
        if snapshot is None:
            records = validate_kb(claims_dir).loaded.records
            summaries, table = [rec.summary() for rec in records], {}
        else:
            summaries, table = snapshot.summaries(), {}
            records = [rec for rec in (snapshot.read(relative_name(p, snapshot.claims_dir)) for p in snapshot.changed)
                       if rec is not None]
        for rec in records:
            if not (rec.report.disclosures or rec.report.models):
                continue  # not a training report (an article about reports): no part of any cohort
            audited = _auditor_for(vocabulary).record(rec.report)
            table[rec.report.id] = {
                o: (rec.report.disclosures[o].status if o in rec.report.disclosures else audited[o].status)
                for o in vocabulary.omission_ids
            }
        stored = snapshot.verdict_counts(PROVIDER) if snapshot is not None else {}
        return cls(vocabulary, snapshot, table, {s.id: s for s in summaries}, {s.id: s.path for s in summaries},
                   stored)

    def cohort(self, report_id: str, omission: str, status: str) -> dict:
        """How many of the other training reports have this status on this omission, of how many judged on it."""
        others = [t[omission] for r, t in self.verdicts.items() if r != report_id and omission in t]
        same, of = others.count(status), len(others)
        if self.stored:
            same += self.stored.get((omission, status), 0)
            of += sum(n for (o, _), n in self.stored.items() if o == omission)
            own = self._stored_own(report_id).get(omission)  # the report itself is no part of its cohort
            if own is not None:
                same, of = same - (own == status), of - 1
        return {"same": same, "of": of, "text": f"{status} in {same} of {of}"}

    def _stored_own(self, report_id: str) -> dict[str, str]:
        if report_id not in self._own:
            self._own[report_id] = self.snapshot.verdicts(PROVIDER, report_id).get(report_id, {})
        return self._own[report_id]

    def similar(self, title: str, organization: str = "", models: Iterable[str] = (),
                exclude: Optional[str] = None) -> list[dict]:
        """Reports already in the knowledge base that this one looks like (kb.duplicates: the same rule as the
        checks' warnings)."""
        return [{"report": m.other.id, "path": self.paths.get(m.other.id), "score": m.score, "why": m.why}
                for m in ReportIndex(self.reports.values()).alike(title, organization, models, exclude)]


# Entry points.


def _read_text(path: Path) -> str:
    if path.suffix.lower() in PDF_SUFFIXES:
        try:
            from pypdf import PdfReader
        except ImportError:
            raise InputError(f"{path}: reading PDF needs the pdf extra (pip install 'report-claims[pdf]')")
        try:
            return "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
        except Exception as e:  # pypdf raises many kinds on broken files
            raise InputError(f"{path}: not a readable PDF ({type(e).__name__}: {e})")
    try:
        return read_text(path, max_bytes=MAX_TEXT_BYTES)
    except YamlError as e:
        where = f":{e.line}" if e.line else ""
        raise InputError(f"{path}{where}: {e.message}")


def audit_text(path: Path, kb: KnowledgeBase, auditor: Optional[Auditor] = None,
               explain: bool = False) -> Audit:
    text = _read_text(path)
    if not re.search(r"\w", text):  # five verdicts of `absent` would say the report was read and says nothing
        scanned = " (a PDF of scanned pages has no text layer: run OCR on it first)"
        raise InputError(f"{path}: no words to read" + (scanned if path.suffix.lower() in PDF_SUFFIXES else ""))
    auditor = auditor or Auditor(kb.vocabulary)
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    title = heading.group(1).strip() if heading else path.stem
    explained = Explanation() if explain else None
    found = auditor.text(text, explained)
    report_id = path.stem
    for o, v in found.items():
        v.cohort = kb.cohort(report_id, o, v.status)
    return Audit(str(path), "text", report_id, title, found, similar=kb.similar(title), explained=explained)


def audit_record(path: Path, kb: KnowledgeBase, claims_dir: Union[str, Path, None], today: date, max_age: int,
                 auditor: Optional[Auditor] = None, explain: bool = False) -> Audit:
    # errors only: the reports it looks like are found below, by the same rule as the checks' warnings; every
    # claim's line is named, so positions come with the first parse
    v = validate_files([path], claims_dir, today=today, db=kb.snapshot, vocabulary=kb.vocabulary, alike=False,
                       all_positions=True)
    if v.loaded.problems or not v.loaded.records:
        raise InputError(f"{path}: not a valid record", v.loaded.problems)
    rec = v.loaded.records[0]
    r = rec.report
    explained = Explanation() if explain else None
    found = (auditor or Auditor(kb.vocabulary)).record(r, lambda i: rec.where("claims", i)[0], explained)
    findings = [Finding("check", p.message, line=p.line) for p in (v.checked.problems if v.checked else [])
                if p.code not in HYGIENE and p.severity == "error"]
    findings += hygiene(rec, v, today, max_age)
    findings += compare_declared(rec, found)
    for o, verdict in found.items():
        verdict.cohort = kb.cohort(r.id, o, verdict.status)
    in_kb = claims_dir is not None and Path(path).resolve().parent == Path(claims_dir).resolve()
    similar = kb.similar(r.title, r.organization, r.models, exclude=r.id if in_kb else None)
    for s in similar:
        findings.append(Finding("similar-report", f"looks like {s['report']} ({s['path']}): {s['why']}"))
    return Audit(str(path), "record", r.id, r.title, found, findings, similar, explained)


def audit_paths(paths: Iterable[Union[str, Path]], claims_dir: Union[str, Path, None] = None,
                today: Optional[date] = None, max_age: Optional[int] = None,
                db: Union[str, Path, None] = None, explain: bool = False) -> list[Union[Audit, InputError]]:
    """Audit each file; an unreadable one yields its InputError in place of an Audit, the others still run.
    `claims_dir`: the knowledge base to compare with (None: none, the packaged vocabulary applies). `db`: a
    database built from claims_dir, read for the reports whose files have not changed since. `explain`: each
    Audit also says how many units it read and why each unit with a cue gave no evidence (Audit.explained)."""
    today = clock.today(today)
    kb = KnowledgeBase.load(claims_dir, db)
    max_age = max_age if max_age is not None else kb.vocabulary.stale_after_days
    auditor = _auditor_for(kb.vocabulary)
    out: list[Union[Audit, InputError]] = []
    for p in map(Path, paths):
        try:
            if not p.exists():
                if p.is_symlink():
                    raise InputError(f"{p}: a symbolic link that leads nowhere (a missing target or a loop)")
                raise InputError(f"{p}: no such file")
            if p.is_dir():
                raise InputError(f"{p}: is a folder; give report files")
            suffix = p.suffix.lower()
            if suffix in RECORD_SUFFIXES:
                out.append(audit_record(p, kb, claims_dir, today, max_age, auditor, explain))
            elif suffix in TEXT_SUFFIXES | PDF_SUFFIXES:
                out.append(audit_text(p, kb, auditor, explain))
            else:
                raise InputError(f"{p}: unknown kind of file (give .yaml records or .md, .txt, .pdf texts)")
        except InputError as e:
            out.append(e)
    return out


_last_auditor: Optional[Auditor] = None


def _auditor_for(vocabulary: Vocabulary) -> Auditor:
    """One Auditor per vocabulary (making one builds its rulebook, ~3 ms): a build asks for the verdicts of one
    report at a time (kb.parallel.Shared), and `audit` for those of the changed records, then of its files."""
    global _last_auditor
    if _last_auditor is None or _last_auditor.vocabulary is not vocabulary:
        _last_auditor = Auditor(vocabulary)
    return _last_auditor


def kb_verdicts(validation: Validation) -> list[dict[str, Any]]:
    """The auditor's verdict for every report of a validated knowledge base: `kb build` stores these next to
    the declared judgements (found through the report_claims.verdicts entry point)."""
    auditor = _auditor_for(validation.vocabulary)
    rows = []
    for rec in validation.loaded.records:
        # only what is stored: the evidence's details are not made (about 3% of auditing long claims)
        for o, status, evidence, missing in auditor.stored(rec.report):
            rows.append({"report": rec.report.id, "omission": o, "status": status, "evidence": evidence,
                         "missing": [m["part"] for m in missing]})
    return rows
