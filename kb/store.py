"""Checked records → SQLite (site/kb.db) with sqlite-utils, written atomically.

The database is built in a temporary file beside the target and renamed over it only after every claim of
the records has been found in it (count and checksum). A failed validation, a crash or a kill at any point
leaves the last good database untouched. When nothing that goes into the database changed since the last
build (same records, vocabulary, code version and day), the build is skipped. When only a few record files
changed, the build is an update: a copy of the last database has the rows of those reports (and of the reports
whose formulas use them) replaced, checked the same way, and renamed over it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from . import clock
from .checks import Checked, check
from .cite import Index, citation, figure
from .load import LoadResult, load_vocabulary, vocabulary_path
from .model import Vocabulary
from .pipeline import Validation, validate
from .problems import Problem
from .snapshot import (SCHEMA_VERSION, Snapshot, base_fingerprint, current_files, open_snapshot, recorded_files,
                       relative_name, trusted_stamp)
from .units import index as unit_index

DEFAULT_DB = "site/kb.db"
STALE_AFTER_DAYS = 365
# An update replaces the rows of the changed reports; past this share of the files a full build is as quick.
UPDATE_AT_MOST = 0.1


class BuildError(Exception):
    def __init__(self, message: str, problems: Optional[list[Problem]] = None):
        super().__init__(message)
        self.problems = problems or []


@dataclass
class BuildResult:
    db_path: Path
    skipped: bool = False  # nothing changed since the last build
    updated: list[str] = field(default_factory=list)  # the reports an update rewrote (empty: a full build)
    counts: dict[str, int] = field(default_factory=dict)
    checksum: str = ""
    warnings: list[Problem] = field(default_factory=list)
    refreshed: bool = False  # an update that rewrote no report (the day changed, or files were only removed)
    today: Optional[date] = None


def inputs_fingerprint(claims_dir: Union[str, Path], today: date, files: Optional[dict] = None) -> str:
    """A hash of everything that goes into the database: record files, vocabulary, schema, code, the day."""
    h = hashlib.sha256(f"{base_fingerprint(claims_dir)}\0{today.isoformat()}\0".encode())
    for rel, (_, digest) in sorted((files if files is not None else current_files(claims_dir)).items()):
        # an unreadable file (a link to nothing) has no digest: validation reports it
        h.update(f"{rel}\0{digest or 'unreadable'}\0".encode())
    return h.hexdigest()


def read_meta(db_path: Union[str, Path]) -> dict[str, str]:
    """The _meta table of a built database, or {} when there is none or it cannot be read."""
    try:
        conn = sqlite3.connect(f"file:{Path(db_path).resolve()}?mode=ro", uri=True)
        try:
            return dict(conn.execute("select key, value from _meta").fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return {}


def build(
    claims_dir: Union[str, Path] = "claims",
    db_path: Union[str, Path] = DEFAULT_DB,
    today: Optional[date] = None,
    force: bool = False,
    progress: Optional[Callable] = None,
    on_stage: Optional[Callable[[str], None]] = None,
) -> BuildResult:
    """Validate the knowledge base and write it to db_path atomically. Raises BuildError on any problem."""
    claims_dir, db_path = Path(claims_dir), Path(db_path)
    today = clock.today(today)
    stage = on_stage or (lambda s: None)
    if not claims_dir.is_dir():
        raise BuildError(f"{claims_dir}: no such folder")
    # the files' digests: those whose size and mtime are as the last build recorded them are not read again
    files = current_files(claims_dir, recorded_files(db_path) if not force and db_path.exists() else None)
    fingerprint = inputs_fingerprint(claims_dir, today, files)
    if not force and db_path.exists():
        meta = read_meta(db_path)
        if meta.get("fingerprint") == fingerprint:
            return BuildResult(db_path, skipped=True, counts=json.loads(meta.get("counts", "{}")),
                               checksum=meta.get("checksum", ""))
        # A build of an earlier day is updated too: the ages of the checks are refreshed, and the reports with a
        # check that went stale since are rewritten. Going back in time may put dates in the future: a full build.
        built_on = _day(meta.get("today"))
        snapshot = open_snapshot(claims_dir, db_path, files) if built_on and built_on <= today else None
        if snapshot is not None:
            updated = _update(snapshot, today, fingerprint, stage, built_on)
            if updated is not None:
                return updated

    stage("validating")
    result = _valid(validate(claims_dir=claims_dir, today=today, progress=progress))
    for rec in result.loaded.records:
        rec.forget_positions()  # every problem is reported; the texts are a large knowledge base's size again

    stage("writing")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with _writer_lock(db_path):
        _remove_stale_temporaries(db_path)
        return _write(db_path, result, today, fingerprint)


def _valid(result: Validation) -> Validation:
    """The validation, or BuildError with its problems: a build never writes records with errors."""
    if result.errors or result.checked is None:
        n = len(result.errors)
        raise BuildError(f"{n} problem{'s' * (n != 1)} in the records; the database was not changed",
                         result.errors)
    return result


def _day(text: Optional[str]) -> Optional[date]:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _update(snapshot: Snapshot, today: date, fingerprint: str, stage: Callable,
            built_on: date) -> Optional[BuildResult]:
    """Replace the rows of the reports whose files changed, in a copy of the last database. None when a full
    build is the better way (many files changed, or a new file takes the id of another report).

    A report whose formulas use a changed report's claims is rewritten too, but only when what its formulas
    see of them changed (a figure, a status, citability), and so on through the reports that use it. On a later
    day than the last build, so is every report with a check that went stale in between."""
    changed, removed = snapshot.changed, snapshot.removed
    aged = snapshot.gone_stale(built_on, today, STALE_AFTER_DAYS) - set(removed.values())
    limit = max(8, UPDATE_AT_MOST * len(snapshot.now))
    if len(changed) + len(removed) + len(aged) > limit:
        return None
    names = {relative_name(p, snapshot.claims_dir) for p in changed}
    old = {snapshot.built[rel][1] for rel in names if rel in snapshot.built} | set(removed.values())
    users = {r for r in aged if snapshot.path_of(r) is not None}
    paths = list(changed) + [snapshot.path_of(r) for r in sorted(users)]
    stage("validating")
    while True:
        result = _valid(_validate_some(paths, snapshot, today))
        new = {rec.report.id for rec in result.loaded.records}
        replaced = old | new
        used = snapshot.users(replaced)
        seen_before = snapshot.stored_claims(used)
        index = Index(result, today, STALE_AFTER_DAYS)
        moved = {ref for ref in used if seen_before.get(ref) != _as_formulas_see_it(index, ref)}
        more = {u for ref in moved for u in used[ref]} - replaced
        if not more:
            break
        users |= more
        paths += [p for p in map(snapshot.path_of, sorted(more)) if p is not None]
        if len(paths) + len(removed) > limit:
            return None
    if new & set(snapshot.unchanged.values()) - users:
        return None  # a report id used twice: the full build says where
    stage("writing")
    with _writer_lock(snapshot.db_path):
        _remove_stale_temporaries(snapshot.db_path)
        if read_meta(snapshot.db_path).get("fingerprint") != snapshot.meta.get("fingerprint"):
            return None  # another build replaced the database meanwhile
        return _write(snapshot.db_path, result, today, fingerprint,
                      update=(replaced, [*names, *removed], built_on != today))


def _validate_some(paths: list[Path], snapshot: Snapshot, today: date) -> Validation:
    if paths:
        return validate(paths, claims_dir=snapshot.claims_dir, today=today, db=snapshot)
    # files were only removed: nothing to read (validate() with no paths reads the whole folder)
    vocabulary = load_vocabulary(vocabulary_path(snapshot.claims_dir))
    return Validation(LoadResult(), check([], vocabulary, today), vocabulary, [], None, snapshot.claims_dir)


def _as_formulas_see_it(index: Index, ref: str) -> Optional[tuple]:
    """A claim as Snapshot.stored_claims gives it: what a formula in another report depends on."""
    cited = index.get(ref)
    if cited is None:
        return None
    c = cited.claim
    low, high = (float(c.low), float(c.high)) if c.value is not None else (None, None)
    return (c.value_text, low, high, c.status, c.formula, int(index.citable(ref)[0]))


@contextmanager
def _writer_lock(db_path: Path):
    """One build at a time writes next to a database: an exclusive lock on .NAME.lock, held while its temporary
    file exists. The kernel releases it when the holder dies, even by SIGKILL."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, and stale temporaries are left alone
        yield False
        return
    with open(db_path.parent / f".{db_path.name}.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _remove_stale_temporaries(db_path: Path) -> None:
    """Temporary databases left by builds that were killed: no build holds them, since the caller holds the
    writer lock and every build removes its own on any error it lives through."""
    if os.name != "posix":  # pragma: no cover
        return
    for stale in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        stale.unlink(missing_ok=True)


def _write(db_path: Path, result: Validation, today: date, fingerprint: str,
           update: Optional[tuple[set[str], list[str], bool]] = None) -> BuildResult:
    """Write a new database (or, with `update` = (reports, files, new day), a copy of the last one with the rows
    of those reports and files replaced, and on a new day the checks' ages refreshed) into a temporary file,
    check it holds the records' claims, rename it over."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{db_path.name}.", suffix=".tmp", dir=db_path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    claims_dir = result.claims_dir
    try:
        if update is None:
            counts = write_database(tmp, result, today)
        else:
            shutil.copyfile(db_path, tmp)
            shutil.copymode(db_path, tmp)  # mkstemp made it private; readers of the database need what they had
            counts = update_database(tmp, result, today, *update)
        written = {rec.report.id for rec in result.loaded.records}
        conn = sqlite3.connect(str(tmp))
        try:
            found = _database_digests(conn, written)
            stored = {report: (digest, n) for report, digest, n in
                      conn.execute("select report, checksum, claims from _files")}
            total = conn.execute("select count(*) from claims").fetchone()[0]
        finally:
            conn.close()
        expected = report_digests(result)
        if found != expected or sum(n for _, n in stored.values()) != total:
            raise BuildError("the written database does not hold the records' claims "
                             f"({total} claims; checksums of {len(set(found.items()) ^ set(expected.items()))} "
                             "reports differ); the database was not changed")
        checksum = combine_digests(stored)
        _write_meta(tmp, {"fingerprint": fingerprint, "checksum": checksum, "counts": json.dumps(counts),
                          "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "schema_version": SCHEMA_VERSION, "today": today.isoformat(),
                          "base": base_fingerprint(claims_dir), "claims_dir": str(Path(claims_dir).resolve())})
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        _replace(tmp, db_path)
        _write_inspect_data(db_path, counts)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return BuildResult(db_path, counts=counts, checksum=checksum, updated=sorted(update[0]) if update else [],
                       warnings=[p for p in result.problems if p.severity != "error"],
                       refreshed=bool(update) and not update[0], today=today)


def _replace(new: Path, db_path: Path) -> None:
    """Rename the new database over the old one. Freeing the old file's blocks takes a tenth of a second for a
    large database on ext4, inside the rename: the old file is kept under a temporary name first, so the rename
    only swaps names, and a child process removes it while the build returns. Should that child never run, the
    next build's clean-up of temporaries removes it."""
    aside = None
    if os.name == "posix" and db_path.exists():
        aside = db_path.parent / f".{db_path.name}.{os.getpid()}-old.tmp"
        try:
            os.link(db_path, aside)
        except OSError:  # no hard links here: the rename frees the blocks itself
            aside = None
    os.replace(new, db_path)
    if aside is not None:
        import subprocess

        try:
            subprocess.Popen(["rm", "-f", str(aside)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            aside.unlink(missing_ok=True)


# The checksum: sha256 per report over its claims' references and figures, then over the reports' sums. A
# build checks the reports it wrote against the records; an update keeps the others' sums from _files.


def report_digests(result: Validation) -> dict[str, tuple[str, int]]:
    """Report → (sha256 over its claims as the records hold them, number of claims)."""
    out = {}
    for rec in result.loaded.records:
        rows = []
        for c in rec.report.claims:
            low, high = (c.low, c.high) if c.value is not None else (None, None)
            rows.append(_checksum_row(f"{rec.report.id}/{c.id}", c.value_text, low, high))
        out[rec.report.id] = (_digest(rows), len(rows))
    return out


def _database_digests(conn: sqlite3.Connection, reports: Optional[set[str]] = None) -> dict[str, tuple[str, int]]:
    """The same, from what the claims table holds (for `reports` only, when given)."""
    by_report: dict[str, list[str]] = {}
    if reports is None:
        rows = conn.execute("select report, ref, value_text, low, high from claims")
    else:
        rows = conn.execute("select report, ref, value_text, low, high from claims where report in "
                            "(select value from json_each(?))", (json.dumps(sorted(reports)),))
    for report, *row in rows:
        by_report.setdefault(report, []).append(_checksum_row(*row))
    found = {report: (_digest(rows), len(rows)) for report, rows in by_report.items()}
    for report in reports or ():  # a report with no claims has none in the table
        found.setdefault(report, (_digest([]), 0))
    return found


def combine_digests(digests: dict[str, tuple[str, int]]) -> str:
    lines = sorted(f"{report}\t{digest}" for report, (digest, _) in digests.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest() + f":{sum(n for _, n in digests.values())}"


def records_checksum(result: Validation) -> str:
    """The checksum of every claim's reference and figure, as the records hold them."""
    return combine_digests(report_digests(result))


def database_checksum(db_path: Union[str, Path]) -> str:
    """The same checksum, computed from what the database holds."""
    conn = sqlite3.connect(str(db_path))
    try:
        digests = _database_digests(conn)
        # reports without claims count in the records' checksum too
        for (report,) in conn.execute("select id from reports"):
            digests.setdefault(report, (_digest([]), 0))
    finally:
        conn.close()
    return combine_digests(digests)


def _checksum_row(ref: str, text: Optional[str], low: Any, high: Any) -> str:
    f = lambda x: "" if x is None else repr(float(x))  # noqa: E731 - SQLite stores figures as REAL
    return f"{ref}\t{text or ''}\t{f(low)}\t{f(high)}"


def _digest(rows: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def _write_meta(db_path: Path, meta: dict[str, str]) -> None:
    conn = sqlite3.connect(str(db_path))
    try:
        with conn:
            conn.execute("create table if not exists _meta ([key] TEXT PRIMARY KEY, [value] TEXT)")
            conn.executemany("insert or replace into _meta ([key], [value]) values (?, ?)", meta.items())
    finally:
        conn.close()


def _write_inspect_data(db_path: Path, counts: dict[str, int]) -> None:
    """Datasette opens the databases named in inspect-data.json immutable (read-only, no locking), and takes
    table counts from it instead of counting on every page."""
    conn = sqlite3.connect(f"file:{db_path.resolve()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
        table_counts = {t: counts[t] if t in counts else conn.execute(f'select count(*) from "{t}"').fetchone()[0]
                        for t in tables if t != "claims_fts"}
        meta = dict(conn.execute("select key, value from _meta"))
    finally:
        conn.close()
    table_counts["claims_fts"] = table_counts["claims"]  # an index of the claims (counting it reads them all)
    # "hash" names the content (Datasette only shows it): the inputs' fingerprint and the claims' checksum
    # stand for the file's sha256, which would read every byte of a large database on every build.
    content = hashlib.sha256(f"{meta['fingerprint']}\0{meta['checksum']}".encode()).hexdigest()
    data = {db_path.stem: {"hash": content, "size": db_path.stat().st_size,
                           "file": db_path.name, "tables": {t: {"count": n} for t, n in table_counts.items()}}}
    target = db_path.parent / "inspect-data.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, target)


# The schema. Column types are explicit so Datasette sorts and filters figures as numbers and dates as text.

TABLES: dict[str, dict[str, Any]] = {
    "reports": dict(
        columns={"id": str, "title": str, "organization": str, "published": str, "models": str, "summary": str,
                 "claims": int, "sources": int, "unsaid": str, "path": str},
        pk="id",
    ),
    "sources": dict(
        columns={"ref": str, "report": str, "id": str, "title": str, "url": str, "path": str, "kind": str,
                 "checked": str, "age_days": int, "note": str},
        pk="ref",
        foreign_keys=[("report", "reports", "id")],
    ),
    "patterns": dict(columns={"id": str, "title": str, "description": str}, pk="id"),
    "omissions": dict(columns={"id": str, "title": str, "description": str, "parts": str, "questions": str},
                      pk="id"),
    "claims": dict(
        columns={"ref": str, "report": str, "id": str, "statement": str, "figure": str, "value": float,
                 "low": float, "high": float, "value_text": str, "bound": str, "unit": str, "unit_normalized": str,
                 "base_unit": str, "value_base": float, "low_base": float, "high_base": float, "status": str,
                 "citable": int, "source": str, "source_url": str, "locator": str, "quote": str, "verified": str,
                 "age_days": int, "note": str, "formula": str, "tolerance": float, "patterns": str, "topics": str,
                 "citation": str},
        pk="ref",
        foreign_keys=[("report", "reports", "id"), ("source", "sources", "ref")],
    ),
    "claim_patterns": dict(
        columns={"claim": str, "pattern": str, "report": str},
        pk=("claim", "pattern"),
        foreign_keys=[("claim", "claims", "ref"), ("pattern", "patterns", "id"), ("report", "reports", "id")],
    ),
    "claim_topics": dict(
        columns={"claim": str, "omission": str, "report": str},
        pk=("claim", "omission"),
        foreign_keys=[("claim", "claims", "ref"), ("omission", "omissions", "id"), ("report", "reports", "id")],
    ),
    "disclosures": dict(
        columns={"report": str, "omission": str, "status": str, "note": str, "evidence": str, "locator": str},
        pk=("report", "omission"),
        foreign_keys=[("report", "reports", "id"), ("omission", "omissions", "id")],
    ),
    "verdicts": dict(
        columns={"report": str, "omission": str, "declared": str, "audited": str, "agree": int, "evidence": str,
                 "missing": str, "provider": str},
        pk=("report", "omission"),
        foreign_keys=[("report", "reports", "id"), ("omission", "omissions", "id")],
    ),
    "graph_nodes": dict(
        columns={"id": str, "kind": str, "key": str, "label": str},
        pk="id",
    ),
    "graph_edges": dict(
        columns={"source": str, "target": str, "relation": str, "evidence": str},
        pk=("source", "target"),
        foreign_keys=[("source", "graph_nodes", "id"), ("target", "graph_nodes", "id")],
    ),
    "charts": dict(
        columns={"id": str, "pattern": str, "title": str, "description": str, "x_base": str, "x_label": str,
                 "x_log": int, "y_base": str, "y_label": str, "y_log": int},
        pk="id",
        foreign_keys=[("pattern", "patterns", "id")],
    ),
    "chart_points": dict(
        columns={"chart": str, "report": str, "x": float, "y": float, "x_claim": str, "y_claim": str,
                 "x_figure": str, "y_figure": str},
        pk=("chart", "report"),
        foreign_keys=[("chart", "charts", "id"), ("report", "reports", "id"), ("x_claim", "claims", "ref"),
                      ("y_claim", "claims", "ref")],
    ),
    "_files": dict(
        columns={"path": str, "sha256": str, "stamp": str, "report": str, "checksum": str, "claims": int},
        pk="path",
        foreign_keys=[("report", "reports", "id")],
    ),
    "derived_checks": dict(
        columns={"claim": str, "report": str, "formula": str, "computed": float, "stated": str,
                 "tolerance": float, "within_tolerance": int, "inputs": str, "error": str},
        pk="claim",
        foreign_keys=[("claim", "claims", "ref"), ("report", "reports", "id")],
    ),
}

INDEXES = [
    ("claims", ["report"]), ("claims", ["status"]), ("claims", ["unit"]), ("claims", ["verified"]),
    ("claims", ["source"]), ("claims", ["citable"]), ("sources", ["report"]), ("claim_patterns", ["pattern"]),
    ("claim_topics", ["omission"]), ("disclosures", ["omission", "status"]), ("derived_checks", ["report"]),
    ("graph_nodes", ["kind"]), ("graph_edges", ["target"]), ("graph_edges", ["relation"]),
]


def omission_matrix_sql(vocabulary: Vocabulary) -> str:
    """A row per report, a column per omission of the vocabulary (data, so the view is generated)."""
    cols = ",\n  ".join(
        f"max(case when d.omission = '{o.id}' then d.status end) as \"{o.id}\"" for o in vocabulary.omissions
    )
    return (
        "select r.id as report, r.title, r.organization,\n  " + cols + "\n"
        "from reports r left join disclosures d on d.report = r.id\n"
        "where exists (select 1 from disclosures x where x.report = r.id)\n"
        "group by r.id order by r.published"
    )


PATTERN_SUPPORT_SQL = """select p.id as pattern, p.title,
  count(distinct cp.report) as reports,
  count(distinct cp.claim) as claims,
  (select group_concat(report, ', ') from (select distinct report from claim_patterns x
     where x.pattern = p.id order by report)) as report_ids
from patterns p left join claim_patterns cp on cp.pattern = p.id
group by p.id order by reports desc, claims desc"""


def verdict_providers() -> list[tuple[str, Callable]]:
    """The verdict providers installed (the auditor registers one), by entry point name."""
    from importlib.metadata import entry_points

    return [(ep.name, ep.load()) for ep in sorted(entry_points(group="report_claims.verdicts"), key=lambda e: e.name)]


def verdict_rows(result: Validation):
    """Every report × omission: the declared judgement next to each provider's verdict."""
    declared = {(rec.report.id, o): d.status for rec in result.loaded.records for o, d in rec.report.disclosures.items()}
    for name, provider in verdict_providers():
        for row in provider(result):
            key = (row["report"], row["omission"])
            yield {"report": row["report"], "omission": row["omission"], "declared": declared.get(key),
                   "audited": row["status"], "agree": None if key not in declared else int(declared[key] == row["status"]),
                   "evidence": json.dumps([f"{x}" for x in row.get("evidence", [])]),
                   "missing": json.dumps(row.get("missing", [])), "provider": name}


def chart_points(result: Validation):
    """For each chart of the vocabulary and each report, the point made by its first claim on each axis."""
    units = unit_index(result.vocabulary)
    for chart in result.vocabulary.charts:
        for rec in result.loaded.records:
            axes: dict[str, Any] = {}
            for c in rec.report.claims:
                norm = units.normalize(c.unit)
                if chart.pattern not in c.patterns or norm is None or c.value is None:
                    continue
                for axis in ("x", "y"):
                    if norm.base == getattr(chart, axis).base and axis not in axes:
                        axes[axis] = (c, float(c.low) * norm.factor)
            if len(axes) == 2:
                (xc, x), (yc, y) = axes["x"], axes["y"]
                yield {"chart": chart.id, "report": rec.report.id, "x": x, "y": y,
                       "x_claim": f"{rec.report.id}/{xc.id}", "y_claim": f"{rec.report.id}/{yc.id}",
                       "x_figure": figure(xc), "y_figure": figure(yc)}




def table_rows(result: Validation, today: date, fs_now_ns: int = 0) -> dict[str, Callable[[], Iterable[dict]]]:
    """For every table, a function giving its rows for the validated records (and the vocabulary). The rows
    are made as they are written, table by table: a large knowledge base's rows never all sit in memory."""
    vocabulary: Vocabulary = result.vocabulary  # type: ignore[assignment]
    checked: Checked = result.checked  # type: ignore[assignment]
    records = result.loaded.records

    def patterns():
        return ({"id": p.id, "title": p.title, "description": p.description} for p in vocabulary.patterns)

    def omissions():
        return ({"id": o.id, "title": o.title, "description": o.description,
                 "parts": json.dumps([p.description for p in o.parts]),
                 "questions": json.dumps([p.question for p in o.parts])} for o in vocabulary.omissions)

    def reports():
        for rec in records:
            r = rec.report
            yield {"id": r.id, "title": r.title, "organization": r.organization, "published": r.published.isoformat(),
                   "models": json.dumps(r.models), "summary": r.summary, "claims": len(r.claims),
                   "sources": len(r.sources), "unsaid": json.dumps(r.unsaid), "path": rec.path}

    def sources():
        for rec in records:
            r = rec.report
            for s in r.sources:
                yield {"ref": f"{r.id}/{s.id}", "report": r.id, "id": s.id, "title": s.title, "url": s.url,
                       "path": s.path, "kind": s.kind, "checked": s.checked.isoformat(),
                       "age_days": (today - s.checked).days, "note": s.note}

    def claims():
        units = unit_index(vocabulary)
        citable = Index(result, today, STALE_AFTER_DAYS)
        for rec in records:
            r = rec.report
            for c in r.claims:
                ref = f"{r.id}/{c.id}"
                src = r.source(c.source) if c.source else None
                norm = units.normalize(c.unit)
                factor = norm.factor if norm else None
                single = c.value is not None and not c.is_range
                derived = checked.derived.get((r.id, c.id))
                ok, _ = citable.citable(ref)
                yield {
                    "ref": ref, "report": r.id, "id": c.id, "statement": c.statement, "figure": figure(c) or None,
                    "value": c.value if single else None,
                    "low": c.low if c.value is not None else None, "high": c.high if c.value is not None else None,
                    "value_text": c.value_text, "bound": c.bound, "unit": c.unit,
                    "unit_normalized": norm.unit if norm else None, "base_unit": norm.base if norm else None,
                    "value_base": c.value * factor if single and factor else None,
                    "low_base": c.low * factor if c.value is not None and factor else None,
                    "high_base": c.high * factor if c.value is not None and factor else None,
                    "status": c.status, "citable": int(ok), "source": f"{r.id}/{c.source}" if c.source else None,
                    "source_url": src.url if src else None, "locator": c.locator, "quote": c.quote,
                    "verified": c.verified.isoformat() if c.verified else None,
                    "age_days": (today - c.verified).days if c.verified else None, "note": c.note,
                    "formula": c.formula, "tolerance": float(c.tolerance) if c.tolerance is not None else None,
                    "patterns": json.dumps(c.patterns), "topics": json.dumps(c.topics),
                    "citation": citation(r, c, src, derived.computed if derived else None),
                }

    def claim_patterns():
        return ({"claim": f"{rec.report.id}/{c.id}", "pattern": p, "report": rec.report.id}
                for rec in records for c in rec.report.claims for p in c.patterns)

    def claim_topics():
        return ({"claim": f"{rec.report.id}/{c.id}", "omission": t, "report": rec.report.id}
                for rec in records for c in rec.report.claims for t in c.topics)

    def disclosures():
        return ({"report": rec.report.id, "omission": omission, "status": d.status, "note": d.note,
                 "evidence": json.dumps([f"{rec.report.id}/{x}" for x in d.claims]), "locator": d.locator}
                for rec in records for omission, d in rec.report.disclosures.items())

    def derived_checks():
        report_ids = {rec.report.id for rec in records}  # a set: a list made this quadratic
        return ({"claim": f"{report_id}/{claim_id}", "report": report_id, "formula": d.formula,
                 "computed": d.computed, "stated": d.stated, "tolerance": d.tolerance,
                 "within_tolerance": int(d.ok), "inputs": json.dumps(d.inputs), "error": d.error}
                for (report_id, claim_id), d in checked.derived.items() if report_id in report_ids)

    def charts():
        return ({"id": c.id, "pattern": c.pattern, "title": c.title, "description": c.description,
                 "x_base": c.x.base, "x_label": c.x.label, "x_log": int(c.x.log), "y_base": c.y.base,
                 "y_label": c.y.label, "y_log": int(c.y.log)} for c in vocabulary.charts)

    def graph(kind: str):
        from .graph import rows

        return rows(result, kind)

    def files():
        digests = report_digests(result)
        claims_dir = Path(result.claims_dir or ".")
        return ({"path": relative_name(Path(rec.path), claims_dir), "sha256": rec.digest,
                 "stamp": trusted_stamp(rec.stamp, fs_now_ns), "report": rec.report.id,
                 "checksum": digests[rec.report.id][0], "claims": digests[rec.report.id][1]} for rec in records)

    return {"reports": reports, "sources": sources, "patterns": patterns, "omissions": omissions,
            "claims": claims, "claim_patterns": claim_patterns, "claim_topics": claim_topics,
            "disclosures": disclosures, "verdicts": lambda: verdict_rows(result),
            "graph_nodes": lambda: graph("node"), "graph_edges": lambda: graph("edge"),
            "charts": charts, "chart_points": lambda: chart_points(result), "_files": files,
            "derived_checks": derived_checks}


def _insert(conn: sqlite3.Connection, name: str, rows: Iterable[dict]) -> int:
    # Plain executemany: the rows hold only text, numbers and None (lists are JSON already), and sqlite-utils'
    # insert_all spends most of a build's writing time converting them.
    columns = list(TABLES[name]["columns"])
    sql = (f'insert into "{name}" ({", ".join(f"[{c}]" for c in columns)}) '
           f'values ({", ".join("?" * len(columns))})')
    cursor = conn.executemany(sql, ([row.get(c) for c in columns] for row in rows))
    return cursor.rowcount


def _fs_clock(path: Path) -> int:
    """The file system's time now: the mtime the kernel gives a byte written beside path (not utime, which a
    faked clock may rewrite)."""
    with tempfile.TemporaryFile(dir=path.parent) as f:
        f.write(b"\0")
        f.flush()
        return os.fstat(f.fileno()).st_mtime_ns


def write_database(path: Path, result: Validation, today: date) -> dict[str, int]:
    """Write every table, index and view into a fresh database at path. Returns row counts per table."""
    import sqlite_utils

    vocabulary: Vocabulary = result.vocabulary  # type: ignore[assignment]
    rows = table_rows(result, today, _fs_clock(path))
    counts: dict[str, int] = {}
    db = sqlite_utils.Database(path, recreate=True)
    db.execute("pragma journal_mode = off")
    db.execute("pragma synchronous = off")
    db.execute("pragma foreign_keys = on")
    # No transaction or journal is needed for atomicity: nobody sees this file until it is renamed.
    for name, spec in TABLES.items():
        db[name].create(spec["columns"], pk=spec["pk"], foreign_keys=spec.get("foreign_keys"),
                        not_null=set([spec["pk"]] if isinstance(spec["pk"], str) else spec["pk"]))
        with db.conn:
            counts[name] = _insert(db.conn, name, rows[name]())
    for table, columns in INDEXES:
        db[table].create_index(columns, if_not_exists=True)
    db.create_view("omission_matrix", omission_matrix_sql(vocabulary))
    db.create_view("pattern_support", PATTERN_SUPPORT_SQL)
    db["claims"].enable_fts(["statement", "quote", "note"], tokenize="porter")
    violations = list(db.execute("pragma foreign_key_check").fetchall())
    if violations:
        raise BuildError(f"foreign keys do not hold in the written database: {violations[:5]}")
    db.execute("analyze")
    db.close()
    return counts


# What an update deletes, children before parents (foreign keys are enforced as it goes).
REPORT_ROWS = ["claim_patterns", "claim_topics", "chart_points", "derived_checks", "verdicts", "disclosures",
               "_files", "claims", "sources"]


def update_database(path: Path, result: Validation, today: date, reports: set[str], files: list[str],
                    new_day: bool = False) -> dict[str, int]:
    """In a copy of the last database at path: delete the rows of `reports` and of the record `files`, insert
    the rows of the validated records (the changed files and the reports whose formulas use them); on a new day,
    count every check's age again (the reports whose citability changed with it are among `reports`)."""
    rows = {name: list(make()) for name, make in table_rows(result, today, _fs_clock(path)).items()}
    doomed = json.dumps(sorted(reports))
    conn = sqlite3.connect(str(path), isolation_level=None)  # transactions are begun and committed here
    try:
        conn.execute("pragma journal_mode = off")  # a temporary copy: an error discards the whole file
        conn.execute("pragma synchronous = off")
        conn.execute("pragma foreign_keys = on")
        conn.execute("begin")
        # Rows of kept reports may point at rows deleted and written again (a formula's input): references are
        # checked when the transaction commits, not at each delete.
        conn.execute("pragma defer_foreign_keys = on")
        conn.execute("create temp table doomed_nodes as select 'claim:' || ref as id from claims where report "
                     "in (select value from json_each(?)) union all select 'source:' || ref from sources "
                     "where report in (select value from json_each(?)) union all select 'report:' || value "
                     "from json_each(?)", (doomed, doomed, doomed))
        conn.execute("delete from graph_edges where source in (select id from doomed_nodes)")
        conn.execute("delete from graph_nodes where id in (select id from doomed_nodes)")
        # the full-text index holds a copy of the text: its rows go before the claims they index
        conn.execute("insert into claims_fts (claims_fts, rowid, statement, quote, note) select 'delete', rowid, "
                     "statement, quote, note from claims where report in (select value from json_each(?))", (doomed,))
        conn.execute("delete from _files where path in (select value from json_each(?))", (json.dumps(files),))
        for name in REPORT_ROWS:
            conn.execute(f'delete from "{name}" where report in (select value from json_each(?))', (doomed,))
        conn.execute("delete from reports where id in (select value from json_each(?))", (doomed,))

        known = {r for (r,) in conn.execute("select id from graph_nodes where kind in ('pattern', 'omission')")}
        rows["graph_nodes"] = [n for n in rows["graph_nodes"] if n["id"] not in known]
        # The graph of the written records leaves out the edges to formulas' inputs in reports kept as they are.
        drawn = {(e["source"], e["target"]) for e in rows["graph_edges"]}
        written_claims = {n["id"] for n in rows["graph_nodes"]}
        rows["graph_edges"] += [
            {"source": f"claim:{d.report}/{d.claim}", "target": f"claim:{ref}", "relation": "derived_from",
             "evidence": None}
            for d in result.checked.derived.values() if f"claim:{d.report}/{d.claim}" in written_claims
            for ref in dict.fromkeys(d.inputs) if (f"claim:{d.report}/{d.claim}", f"claim:{ref}") not in drawn]
        for name in ["reports", *reversed(REPORT_ROWS), "graph_nodes", "graph_edges"]:
            _insert(conn, name, rows[name])
        if new_day:
            conn.execute("update claims set age_days = cast(julianday(?) - julianday(verified) as integer) "
                         "where verified is not null", (today.isoformat(),))
            conn.execute("update sources set age_days = cast(julianday(?) - julianday(checked) as integer)",
                         (today.isoformat(),))
        written = json.dumps(sorted(rec.report.id for rec in result.loaded.records))
        conn.execute("insert into claims_fts (rowid, statement, quote, note) select rowid, statement, quote, note "
                     "from claims where report in (select value from json_each(?))", (written,))
        conn.execute("commit")
        counts = {t: conn.execute(f'select count(*) from "{t}"').fetchone()[0] for t in TABLES}
    except sqlite3.IntegrityError as e:
        raise BuildError(f"the update breaks the database's references ({e}); the database was not changed")
    finally:
        conn.close()
    return counts
