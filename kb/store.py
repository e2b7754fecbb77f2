"""The build's order of work: checked records → the SQLite database (site/kb.db), written atomically.

A full build validates the knowledge base, writes every table into a temporary file beside the target and
checks that the file holds every claim of the records (kb.db.write: count and checksum, kb.db.checksum),
writes inspect-data.json, and renames the file over the last database (kb.db.atomic). A failed validation, a
crash or a kill at any point leaves the last good database untouched.

When nothing that goes into the database changed since the last build (kb.fingerprint), the build is skipped.
When a few record files changed, or only the day, the build is an update: a copy of the last database has the
rows of those reports (and of the reports whose formulas see a change through them) replaced, checked the same
way, and renamed over it.
"""

from __future__ import annotations

import gc
import json
import shutil
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable, Optional, Union

from . import clock, compiled
from .checks import check
from .cite import Index
from .collector import few_collections
from .db import atomic, read
from .db.inspect import write_inspect_data
from .db.rows import Verdicts
from .db.schema import SCHEMA_VERSION
from .db.write import IntegrityError, update_database, write_database, write_meta
from .fingerprint import base_fingerprint, inputs_fingerprint
from .load import LoadResult, load_vocabulary, vocabulary_path
from .pipeline import Validation, validate_files, validate_kb, vocabulary_of
from .problems import Problem
from .reverify import Results, ResultsError
from .snapshot import Snapshot, current_files, open_snapshot, relative_name
from .sources import Cache, cache_dir
from .verdict_cache import VerdictCache, vocabulary_digest

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


def build(
    claims_dir: Union[str, Path],
    db_path: Union[str, Path],
    today: Optional[date] = None,
    force: bool = False,
    progress: Optional[Callable] = None,
    on_stage: Optional[Callable[[str], None]] = None,
    cache: Union[str, Path, None] = None,
) -> BuildResult:
    """Validate the knowledge base and write it to db_path atomically, with the last kb reverify results found in
    the cache folder (kb.sources.cache_dir: `cache`, else KB_CACHE, else .cache/ beside claims/). Raises
    BuildError on any problem."""
    claims_dir, db_path = Path(claims_dir), Path(db_path)
    today = clock.today(today)
    stage = on_stage or (lambda s: None)
    if not claims_dir.is_dir():
        raise BuildError(f"{claims_dir}: no such folder")
    cache_folder = cache_dir(claims_dir.resolve().parent, cache)
    results_path = Cache(cache_folder).results
    try:
        reverified = Results.load(results_path)
    except ResultsError as e:
        raise BuildError(f"{e}; the database was not changed")
    # the files' digests: those whose size and mtime are as the last build recorded them are not read again
    files = current_files(claims_dir, read.recorded_files(db_path) if not force and db_path.exists() else None)
    base = base_fingerprint(claims_dir)
    fingerprint = inputs_fingerprint(base, today, files, reverified.digest)
    if not force and db_path.exists():
        meta = read.meta(db_path)
        if meta.get("fingerprint") == fingerprint:
            return BuildResult(db_path, skipped=True, counts=json.loads(meta.get("counts", "{}")),
                               checksum=meta.get("checksum", ""))
        # A build of an earlier day is updated too: the ages of the checks are refreshed, and the reports with a
        # check that went stale since are rewritten. Going back in time may put dates in the future: a full build.
        # New reverify results may concern any claim: a full build too (they come once a week).
        built_on = _day(meta.get("today"))
        same_results = meta.get("reverify", "") == reverified.digest
        snapshot = open_snapshot(claims_dir, db_path, files) if built_on and built_on <= today and same_results \
            else None
        if snapshot is not None:
            updated = _update(snapshot, today, fingerprint, base, stage, built_on, reverified, cache_folder)
            if updated is not None:
                return updated

    with few_collections():
        stage("validating")
        vocabulary = vocabulary_of(claims_dir)
        if isinstance(vocabulary, Validation):
            _valid(vocabulary)
        # the verdicts of each record are audited from the moment it is read, in forked children (kb.parallel)
        verdicts = Verdicts(vocabulary, _verdict_cache(cache_folder, vocabulary), ahead=True)
        try:
            # each record made smaller as it is read (kb.compact): nothing changes them after
            result = _valid(validate_kb(claims_dir, today=today, progress=progress, compact=True,
                                        vocabulary=vocabulary, on_record=verdicts.add))
            for rec in result.loaded.records:
                rec.forget_positions()  # every problem is reported; the texts are a large knowledge base's size
            gc.freeze()  # the records live until the build ends: no collection needs to walk them again
            verdicts.close()  # the last records' auditing starts while the other tables are written

            stage("writing")
            db_path.parent.mkdir(parents=True, exist_ok=True)
            with atomic.writer_lock(db_path):
                return _write(db_path, result, today, fingerprint, base, reverified, cache_folder, verdicts=verdicts)
        finally:
            verdicts.stop()  # the children of a build that failed; those of one that did not have ended


def _day(text: Optional[str]) -> Optional[date]:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _valid(result: Validation) -> Validation:
    """The validation, or BuildError with its problems: a build never writes records with errors."""
    if result.errors or result.checked is None:
        n = len(result.errors)
        raise BuildError(f"{n} problem{'s' * (n != 1)} in the records; the database was not changed",
                         result.errors)
    return result


def _update(snapshot: Snapshot, today: date, fingerprint: str, base: str, stage: Callable,
            built_on: date, reverified: Results, cache_folder: Optional[Path] = None) -> Optional[BuildResult]:
    """Replace the rows of the reports whose files changed, in a copy of the last database. None when a full
    build is the better way (many files changed, or a new file takes the id of another report).

    A report whose formulas use a changed report's claims is rewritten too, but only when what its formulas
    see of them changed (a figure, a status, citability), and so on through the reports that use it. On a later
    day than the last build, so is every report with a check that went stale in between."""
    changed, removed = snapshot.changed, snapshot.removed
    vocabulary = load_vocabulary(vocabulary_path(snapshot.claims_dir))
    aged = snapshot.gone_stale(built_on, today, vocabulary.stale_after_days) - set(removed.values())
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
        index = Index(result, today, reverify=reverified)
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
    with atomic.writer_lock(snapshot.db_path):
        if read.meta(snapshot.db_path).get("fingerprint") != snapshot.meta.get("fingerprint"):
            return None  # another build replaced the database meanwhile
        return _write(snapshot.db_path, result, today, fingerprint, base, reverified, cache_folder,
                      update=(replaced, [*names, *removed], built_on != today))


def _validate_some(paths: list[Path], snapshot: Snapshot, today: date) -> Validation:
    if paths:
        return validate_files(paths, snapshot.claims_dir, today=today, db=snapshot, read_inputs=True)
    # files were only removed: nothing to read
    vocabulary = load_vocabulary(vocabulary_path(snapshot.claims_dir))
    return Validation(LoadResult(), check([], vocabulary, today), vocabulary, [], claims_dir=snapshot.claims_dir)


def _as_formulas_see_it(index: Index, ref: str) -> Optional[tuple]:
    """A claim as kb.db.read.formulas_see gives it: what a formula in another report depends on."""
    cited = index.get(ref)
    if cited is None:
        return None
    c = cited.claim
    low, high = (float(c.low), float(c.high)) if c.value is not None else (None, None)
    return (c.value_text, low, high, c.status, c.formula, int(index.citable(ref)[0]), index.drift(ref))


def _verdict_cache(cache_folder: Optional[Path], vocabulary) -> Optional[VerdictCache]:
    return VerdictCache(cache_folder, vocabulary_digest(vocabulary)) if cache_folder else None


def _write(db_path: Path, result: Validation, today: date, fingerprint: str, base: str, reverified: Results,
           cache_folder: Optional[Path] = None, update: Optional[tuple[set[str], list[str], bool]] = None,
           verdicts: Optional[Verdicts] = None) -> BuildResult:
    """Write a new database (or, with `update` = (reports, files, new day), a copy of the last one with the rows
    of those reports and files replaced, and on a new day the checks' ages refreshed) into a temporary file,
    check it holds the records' claims, rename it over. `verdicts`: for a new database, the records' verdicts
    (kb.db.rows.Verdicts, with the cache in cache_folder); an update reads and keeps them in cache_folder itself."""
    with atomic.temporary(db_path) as tmp:
        try:
            if update is None:
                written = write_database(tmp, result, today, atomic.fs_clock(tmp), reverified, verdicts)
            else:
                shutil.copyfile(db_path, tmp)
                shutil.copymode(db_path, tmp)  # mkstemp made it private; readers of the database need what they had
                written = update_database(tmp, result, today, atomic.fs_clock(tmp), *update, reverify=reverified,
                                          verdict_cache=_verdict_cache(cache_folder, result.vocabulary))
        except IntegrityError as e:
            raise BuildError(f"{e}; the database was not changed")
        counts, combined = written.counts, written.checksum
        write_meta(tmp, {"fingerprint": fingerprint, "checksum": combined, "counts": json.dumps(counts),
                         "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         "schema_version": SCHEMA_VERSION, "today": today.isoformat(), "base": base,
                         "claims_dir": str(Path(result.claims_dir).resolve()),
                         "stale_after_days": str(result.vocabulary.stale_after_days),
                         "reverify": reverified.digest,
                         # the records' validators for the commands that read one record (kb.compiled)
                         "compiled": compiled.dump()})
        atomic.replace(tmp, db_path)
    write_inspect_data(db_path, counts)
    return BuildResult(db_path, counts=counts, checksum=combined, updated=sorted(update[0]) if update else [],
                       warnings=[p for p in result.problems if p.severity != "error"],
                       refreshed=bool(update) and not update[0], today=today)

