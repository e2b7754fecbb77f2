"""The auditor: for a report (a record in format v1, or the report's text), a graded verdict on each omission of
the vocabulary, with its evidence and what is still missing; hygiene findings; and the knowledge base's context.

How a verdict is decided, omission by omission (the parts and cues are data, in claims/_vocabulary.yaml):

- each part of the omission is looked for in the evidence: a claim's statement, quote and unit (a record), or a
  sentence (a text). A cue phrase matching with rapidfuzz's partial ratio at CUE_SCORE or more *mentions* the
  part, when the text is about the omission at all (it matches one of the omission's anchors, or the claim is
  tagged with it) and the cue is not negated ("no rollbacks", "excluding ablations");
- a claim tagged with the omission (its topics, or the declared disclosure's evidence) that matches none of its
  parts still mentions the omission;
- a mention that carries a figure (a claim with a value, or a sentence with a number) *gives* the part;
- disclosed: at least `disclosed_at` parts (default all) are given; partial: anything is mentioned or given;
  absent: nothing is.

The auditor depends on kb (the records, checks, vocabulary); kb never imports it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from kb import clock, codes
from kb.duplicates import Index as ReportIndex, Summary
from kb.load import load_vocabulary, record_files, vocabulary_path
from kb.model import Claim, Omission, Report, Vocabulary
from kb.pipeline import Validation, validate_files, validate_kb
from kb.problems import Problem
from kb.snapshot import Snapshot, open_snapshot, relative_name
from kb.yaml12 import YamlError, read_text

PROVIDER = "audit"  # the name this auditor's verdicts are stored under (its entry point, pyproject.toml)

CUE_SCORE = 90.0
LEVELS = {"absent": 0, "partial": 1, "disclosed": 2}
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
    score: float
    figure: bool  # whether this evidence carries a figure
    claim: Optional[str] = None  # report/claim, for a record
    sentence: Optional[str] = None  # for a text
    line: Optional[int] = None


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
        }


# Matching.

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:\s?[%×x]|[KMBT]\b)?")
_NOT_FIGURES = re.compile(r"\b(?:19|20)\d\d[a-z]?\b|\[\d+(?:[,–-]\s*\d+)*\]|\b(?:Sec(?:tion)?|Table|Fig(?:ure)?|"
                          r"Appendix|App|§)\.?\s*[A-Z]?\d+(?:\.\d+)*", re.IGNORECASE)


def has_figure(text: str) -> bool:
    """Whether a sentence states a figure (not just a year, a citation marker or a section number)."""
    return bool(_NUMBER.search(_NOT_FIGURES.sub(" ", text)))


_NEGATION = re.compile(r"\b(?:no|not|never|without|neither|nor|none|zero|excluding|exclude[sd]?|n't)\b|n't\b",
                       re.IGNORECASE)


_DENIAL = re.compile(r"\b(?:no|not|never|none)\b|n't\b", re.IGNORECASE)


class Matcher:
    """Cue phrases of every omission part, matched against texts with rapidfuzz."""

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self.cues: list[tuple[str, str, str]] = []  # (omission, part, cue)
        for o in vocabulary.omissions:
            for p in o.parts:
                for cue in p.cues:
                    self.cues.append((o.id, p.id, cue.lower()))
        self.cue_texts = [c[2] for c in self.cues]
        self.anchors = {o.id: [a.lower() for a in o.anchors] for o in vocabulary.omissions}

    def scores(self, texts: list[str]) -> list[dict[int, float]]:
        """For each text, the partial-ratio score of every cue that reaches CUE_SCORE, by cue index."""
        from rapidfuzz import fuzz, process

        return [
            {j: score for _, score, j in process.extract(t.lower(), self.cue_texts, scorer=fuzz.partial_ratio,
                                                          score_cutoff=CUE_SCORE, limit=None)}
            for t in texts
        ]

    def anchored(self, omission: str, text: str) -> bool:
        """Whether the text is about the omission at all (always, when it has no anchors)."""
        anchors = self.anchors.get(omission)
        low = text.lower()
        return not anchors or any(a in low for a in anchors)

    @staticmethod
    def negated(cue: str, text: str) -> bool:
        """Whether the cue stands in a negation ("no rollbacks", "excluding ablations", "were not given")."""
        from rapidfuzz import fuzz

        at = fuzz.partial_ratio_alignment(cue, text.lower())
        window = text[max(0, at.dest_start - 50): at.dest_end + 25]
        return bool(_NEGATION.search(window))

    def evidence(self, text: str, row: dict[int, float], figure: bool, tagged: set[str] = frozenset(),
                 **where: Any) -> list[tuple[str, Evidence]]:
        """The evidence one text gives: per (omission, part), its best cue, unless the text is not about the
        omission (no anchor) or the cue is negated. Omissions the text is tagged with but whose parts it does
        not match are mentioned (partial at most)."""
        best: dict[tuple[str, str], tuple[float, str]] = {}
        for j, score in row.items():
            o, p, cue = self.cues[j]
            if score > best.get((o, p), (0.0, ""))[0]:
                best[(o, p)] = (float(score), cue)
        out: list[tuple[str, Evidence]] = []
        for (o, p), (score, cue) in best.items():
            if (o in tagged or self.anchored(o, text)) and not self.negated(cue, text):
                out.append((o, Evidence(p, cue, round(score, 1), figure, **where)))
        # A tag says the text is about the omission; unless it opens by saying what is *not* there ("The report
        # gives no data ratios"), that is a mention.
        if tagged and not _DENIAL.search(" ".join(text.split()[:6])):
            for o in tagged:
                if not any(x == o for x, _ in out):
                    out.append((o, Evidence(MENTION, f"tagged {o}", 0.0, False, **where)))
        return out


MENTION = "(mentioned)"


def _claim_text(c: Claim) -> str:
    return " ".join(x for x in (c.statement, c.quote or "", c.unit or "") if x)


def evidence_from_record(report: Report, matcher: Matcher, where=None) -> list[tuple[str, Evidence]]:
    """(omission, evidence) pairs from a record's claims. A claim is tagged with an omission when its topics
    name it or the record's declared disclosure lists it as evidence. Contradicted claims are no evidence."""
    out: list[tuple[str, Evidence]] = []
    claims = report.claims
    if not claims:
        return out
    # Claims a declaration gives as evidence of (some) disclosure count as tagged with that omission.
    declared: dict[str, set[str]] = {}
    for o, d in report.disclosures.items():
        if d.status != "absent":
            for cid in d.claims:
                declared.setdefault(cid, set()).add(o)
    rows = matcher.scores([_claim_text(c) for c in claims])
    for i, c in enumerate(claims):
        if c.status == "contradicted":
            continue  # its statement is what the source does not say
        tagged = set(c.topics) | declared.get(c.id, set())
        out += matcher.evidence(_claim_text(c), rows[i], c.value is not None, tagged,
                                claim=f"{report.id}/{c.id}", line=where(i) if where else None)
    return out


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])|\n\s*\n|\n\s*[-*•]\s+|\n#+\s")


def sentences(text: str) -> list[tuple[int, str]]:
    """(line, sentence) pairs of a report's text; short fragments are dropped."""
    out = []
    pos = 0
    for piece in _SPLIT.split(text):
        start = text.find(piece, pos)
        if start < 0:
            start = pos
        pos = start + len(piece)
        s = " ".join(piece.split())
        if len(s) >= 20:
            out.append((text.count("\n", 0, start) + 1, s[:1000]))
    return out


def evidence_from_text(text: str, matcher: Matcher) -> list[tuple[str, Evidence]]:
    out: list[tuple[str, Evidence]] = []
    found = sentences(text)
    if not found:
        return out
    rows = matcher.scores([s for _, s in found])
    for i, (line, s) in enumerate(found):
        out += matcher.evidence(s, rows[i], has_figure(s), sentence=s, line=line)
    return out


def decide(omission: Omission, evidence: list[Evidence]) -> Verdict:
    given = [p.id for p in omission.parts if any(e.part == p.id and e.figure for e in evidence)]
    mentioned = [p.id for p in omission.parts if p.id not in given and any(e.part == p.id for e in evidence)]
    if len(given) >= omission.parts_needed:
        status = "disclosed"
    elif evidence:
        status = "partial"
    else:
        status = "absent"
    missing = [{"part": p.id, "question": p.question} for p in omission.parts if p.id not in given]
    if status == "disclosed":
        missing = []
    ordered = sorted(evidence, key=lambda e: (not e.figure, -e.score))
    return Verdict(omission.id, status, ordered[:12], given, mentioned, missing)


def verdicts(evidence: Iterable[tuple[str, Evidence]], vocabulary: Vocabulary) -> dict[str, Verdict]:
    by_omission: dict[str, list[Evidence]] = {o.id: [] for o in vocabulary.omissions}
    for o, e in evidence:
        if o in by_omission:
            by_omission[o].append(e)
    return {o.id: decide(o, by_omission[o.id]) for o in vocabulary.omissions}


def audit_report(report: Report, vocabulary: Vocabulary, matcher: Optional[Matcher] = None,
                 where=None) -> dict[str, Verdict]:
    """The verdicts for one validated record."""
    matcher = matcher or Matcher(vocabulary)
    return verdicts(evidence_from_record(report, matcher, where), vocabulary)


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
    verdicts: dict[str, dict[str, str]]  # report → omission → status (declared, else audited)
    reports: dict[str, Summary]
    paths: dict[str, str]

    @classmethod
    def load(cls, claims_dir: Union[str, Path, None], db: Union[str, Path, None] = None) -> "KnowledgeBase":
        """The knowledge base's reports and verdicts: from the database `db` for the files unchanged since it
        was built (kb.snapshot), audited here for the others; all audited here when there is no such database.
        Without a knowledge base (claims_dir None), an empty one with the packaged vocabulary."""
        vocabulary = load_vocabulary(vocabulary_path(claims_dir))
        if claims_dir is None or not Path(claims_dir).is_dir() or not record_files(claims_dir):
            return cls(vocabulary, None, {}, {}, {})
        snapshot = open_snapshot(claims_dir, db)
        if snapshot is None:
            records = validate_kb(claims_dir).loaded.records
            summaries, table = [rec.summary() for rec in records], {}
        else:
            summaries = snapshot.summaries()
            unchanged = set(snapshot.unchanged.values())
            table = {r: t for r, t in snapshot.verdicts(PROVIDER).items() if r in unchanged}
            records = [rec for rec in (snapshot.read(relative_name(p, snapshot.claims_dir)) for p in snapshot.changed)
                       if rec is not None]
        matcher = Matcher(vocabulary)
        for rec in records:
            if not (rec.report.disclosures or rec.report.models):
                continue  # not a training report (an article about reports): no part of any cohort
            audited = audit_report(rec.report, vocabulary, matcher)
            table[rec.report.id] = {
                o: (rec.report.disclosures[o].status if o in rec.report.disclosures else audited[o].status)
                for o in vocabulary.omission_ids
            }
        return cls(vocabulary, snapshot, table, {s.id: s for s in summaries}, {s.id: s.path for s in summaries})

    def cohort(self, report_id: str, omission: str, status: str) -> dict:
        others = {r: t for r, t in self.verdicts.items() if r != report_id and omission in t}
        same = sum(1 for t in others.values() if t[omission] == status)
        return {"same": same, "of": len(others), "text": f"{status} in {same} of {len(others)}"}

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


def audit_text(path: Path, kb: KnowledgeBase, matcher: Optional[Matcher] = None) -> Audit:
    text = _read_text(path)
    matcher = matcher or Matcher(kb.vocabulary)
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    title = heading.group(1).strip() if heading else path.stem
    found = verdicts(evidence_from_text(text, matcher), kb.vocabulary)
    report_id = path.stem
    for o, v in found.items():
        v.cohort = kb.cohort(report_id, o, v.status)
    return Audit(str(path), "text", report_id, title, found, similar=kb.similar(title))


def audit_record(path: Path, kb: KnowledgeBase, claims_dir: Union[str, Path, None], today: date, max_age: int,
                 matcher: Optional[Matcher] = None) -> Audit:
    v = validate_files([path], claims_dir, today=today, db=kb.snapshot)
    if v.loaded.problems or not v.loaded.records:
        raise InputError(f"{path}: not a valid record", v.loaded.problems)
    rec = v.loaded.records[0]
    r = rec.report
    found = audit_report(r, kb.vocabulary, matcher or Matcher(kb.vocabulary), where=lambda i: rec.where("claims", i)[0])
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
    return Audit(str(path), "record", r.id, r.title, found, findings, similar)


def audit_paths(paths: Iterable[Union[str, Path]], claims_dir: Union[str, Path, None] = None,
                today: Optional[date] = None, max_age: Optional[int] = None,
                db: Union[str, Path, None] = None) -> list[Union[Audit, InputError]]:
    """Audit each file; an unreadable one yields its InputError in place of an Audit, the others still run.
    `claims_dir`: the knowledge base to compare with (None: none, the packaged vocabulary applies). `db`: a
    database built from claims_dir, read for the reports whose files have not changed since."""
    today = clock.today(today)
    kb = KnowledgeBase.load(claims_dir, db)
    max_age = max_age if max_age is not None else kb.vocabulary.stale_after_days
    matcher = Matcher(kb.vocabulary)
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
                out.append(audit_record(p, kb, claims_dir, today, max_age, matcher))
            elif suffix in TEXT_SUFFIXES | PDF_SUFFIXES:
                out.append(audit_text(p, kb, matcher))
            else:
                raise InputError(f"{p}: unknown kind of file (give .yaml records or .md, .txt, .pdf texts)")
        except InputError as e:
            out.append(e)
    return out


def kb_verdicts(validation: Validation) -> list[dict[str, Any]]:
    """The auditor's verdict for every report of a validated knowledge base: `kb build` stores these next to
    the declared judgements (found through the report_claims.verdicts entry point)."""
    vocabulary = validation.vocabulary
    matcher = Matcher(vocabulary)
    rows = []
    for rec in validation.loaded.records:
        for o, v in audit_report(rec.report, vocabulary, matcher).items():
            rows.append({
                "report": rec.report.id, "omission": o, "status": v.status,
                "evidence": [e.claim for e in v.evidence if e.claim],
                "missing": [m["part"] for m in v.missing],
            })
    return rows
