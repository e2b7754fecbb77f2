"""The last built database as an index of the record files it was built from.

One-record commands (`kb validate FILE`, `audit FILE`) and the incremental build need to know about the rest of
the knowledge base (report ids and titles, the records a formula refers to, the auditor's verdicts) without
reading a thousand files (a formula's input that a record states, not derives, is read from its claims row).
A build stores the sha256 of every record file it read (table `_files`); a file whose bytes are unchanged is
taken from the database, the others are read. A database built from another vocabulary or another version of
the code (or of a verdict provider) is not used: its base fingerprint differs.

This module reads the database (through kb.db.read) but sits beside `load`, not after `store`: it only answers
"what did the last build see", so the pipeline keeps one direction.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Iterable, Optional, Union

from .checks import StoredFigure
from .compiled import Compiled, load as load_validators
from .db import read
from .duplicates import Summary
from .load import Loaded, load_file, named_record_files


def file_digest(path: Path) -> Optional[str]:
    """sha256 of a file's bytes; None when it cannot be read (validation reports why)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def relative_name(path: Path, claims_dir: Path) -> str:
    if path.parent == claims_dir:  # most files: without Path.relative_to, a tenth of the time
        return path.name
    return path.relative_to(claims_dir).as_posix() if path.is_relative_to(claims_dir) else path.name


@dataclass
class Snapshot:
    """A built database next to the record files as they are now."""

    db_path: Path
    claims_dir: Path
    meta: dict[str, str]
    built: dict[str, tuple[str, str]]  # relative path → (sha256, report id) as the last build read them
    now: dict[str, tuple[Path, Optional[str]]]  # relative path → (path, sha256) of every record file today
    _loaded: dict[str, Loaded] = field(default_factory=dict)  # relative path → record read from its file
    # the validators the build stored (kb.compiled), for the commands that read a few records; None for a build,
    # which writes what pydantic's models make
    compiled: Optional[Compiled] = None

    @cached_property
    def unchanged(self) -> dict[str, str]:
        """Relative path → report id of the files whose bytes the last build read."""
        return {rel: self.built[rel][1] for rel, (_, digest) in self.now.items()
                if digest is not None and rel in self.built and self.built[rel][0] == digest}

    @cached_property
    def changed(self) -> list[Path]:
        """New files and files whose bytes differ from what the last build read."""
        unchanged = self.unchanged
        return [p for rel, (p, _) in sorted(self.now.items()) if rel not in unchanged]

    @property
    def removed(self) -> dict[str, str]:
        """Relative path → report id of the files the last build read that are gone."""
        return {rel: report for rel, (_, report) in self.built.items() if rel not in self.now}

    def read(self, rel: str) -> Optional[Loaded]:
        """The record of a file, read once; None when it does not validate."""
        if rel not in self._loaded:
            path = self.now[rel][0] if rel in self.now else self.claims_dir / rel
            # one file at a time: see kb.load.FAST_PARSE_MIN_FILES
            found = load_file(path, fast=False, compiled=self.compiled).records
            if not found:
                return None
            self._loaded[rel] = found[0]
        return self._loaded[rel]

    def summaries(self, exclude: set[str] = frozenset()) -> list[Summary]:
        """Every report of the knowledge base as it is now, but those read from the files in `exclude` (real
        paths): from the database where the file is unchanged, from the file otherwise."""
        by_report = self._by_report
        out = []
        for s in self._stored_summaries:
            rel = by_report.get(s.id)
            if rel is not None and not (exclude and self._real(rel) in exclude):
                out.append(Summary(s.id, s.title, s.organization, s.models, str(self.now[rel][0]), s.title_line))
        for p in self.changed:
            if os.path.realpath(p) in exclude:
                continue
            rec = self.read(relative_name(p, self.claims_dir))
            if rec is not None:
                out.append(rec.summary())
        return out

    def record(self, report_id: str, exclude: set[str] = frozenset()) -> Optional[Loaded]:
        """The record of a report as its file is now (changed files first: a file may have changed its id)."""
        for p in self.changed:
            if os.path.realpath(p) in exclude:
                continue
            rec = self.read(relative_name(p, self.claims_dir))
            if rec is not None and rec.report.id == report_id:
                return rec
        rel = self._by_report.get(report_id)
        if rel is not None and not (exclude and self._real(rel) in exclude):
            return self.read(rel)
        return None

    @cached_property
    def _stored_summaries(self) -> list[Summary]:
        return read.summaries(self.db_path)

    @cached_property
    def _claims_dir_real(self) -> str:
        return os.path.realpath(self.claims_dir)

    def _real(self, rel: str) -> str:
        """The real path of a file of the knowledge base (a file's own checks leave it out by its real path)."""
        path = self.now[rel][0]
        if "/" not in rel and not os.path.islink(path):  # one lstat, not one per folder of the path
            return os.path.join(self._claims_dir_real, rel)
        return os.path.realpath(path)

    def figures(self, refs: Iterable[str], exclude: set[str] = frozenset()) -> dict[str, StoredFigure]:
        """The plain figures among these claim references (report/claim) as the last build stored them, for
        the records whose files are unchanged (and not in `exclude`): a formula that refers to them needs no file
        read. Nothing while another file has changed (it may now hold one of these reports)."""
        if any(os.path.realpath(p) not in exclude for p in self.changed):
            return {}
        wanted = []
        for ref in refs:
            rel = self._by_report.get(ref.rpartition("/")[0])
            if rel is not None and not (exclude and self._real(rel) in exclude):
                wanted.append(ref)
        out = {}
        for ref, (value_text, low, high, status, formula, *_) in self.stored_claims(wanted).items():
            if not (status == "derived" and formula):  # a derived figure is computed from its own inputs
                out[ref] = StoredFigure(value_text, low, high)
        return out

    def users(self, report_ids: Iterable[str]) -> dict[str, set[str]]:
        """Claim reference of the given reports → the other reports whose formulas use it (as last built)."""
        return read.formula_users(self.db_path, report_ids)

    def stored_claims(self, refs: Iterable[str]) -> dict[str, tuple]:
        """What a formula elsewhere sees of each claim, as the last build stored it (see `kb.store`)."""
        return read.formulas_see(self.db_path, refs)

    def gone_stale(self, since: date, today: date, max_age: int) -> set[str]:
        """The reports with a check that was citable on `since` and is stale `today`."""
        return read.gone_stale(self.db_path, since, today, max_age)

    def verdicts(self, provider: str, report: Optional[str] = None) -> dict[str, dict[str, str]]:
        """The verdicts the last build stored from a provider (declared judgements first): report → omission →
        status, of the training reports whose files are unchanged (or of `report` alone, if its file is)."""
        unchanged = set(self.unchanged.values())
        if report is not None and report not in unchanged:
            return {}
        return {r: t for r, t in read.verdicts(self.db_path, provider, report).items() if r in unchanged}

    def verdict_counts(self, provider: str) -> dict[tuple[str, str], int]:
        """(omission, status) → how many of the training reports whose files are unchanged have it."""
        unchanged = set(self.unchanged.values())
        return read.verdict_counts(self.db_path, provider, {r for _, r in self.built.values()} - unchanged)

    @cached_property
    def _by_report(self) -> dict[str, str]:
        return {report: rel for rel, report in self.unchanged.items()}

    def path_of(self, report_id: str) -> Optional[Path]:
        """The file of a report whose file is unchanged since the build."""
        rel = self._by_report.get(report_id)
        return self.now[rel][0] if rel is not None else None


# A file modified this close to the moment a build saw it might change again within the same mtime tick
# without its size or mtime changing ("racy git"): its stamp is not recorded, so it is always hashed again.
RACY_NS = 2_000_000_000


def trusted_stamp(stamp: Optional[tuple[int, int]], now_ns: int) -> Optional[str]:
    """The (size, mtime_ns) stamp a build records for a file it read, or None when it is too recent to trust.
    `now_ns` is the file system's clock (as git does, the mtime of a file being written: the process's clock
    may be another, as under faketime)."""
    if stamp is None or now_ns - stamp[1] < RACY_NS:
        return None
    return f"{stamp[0]}:{stamp[1]}"


def current_files(claims_dir: Union[str, Path], known: Optional[dict[str, tuple[str, Optional[str]]]] = None
                  ) -> dict[str, tuple[Path, Optional[str]]]:
    """Relative path → (path, sha256) of every record file of a claims folder. `known`: relative path →
    (sha256, stamp) as the last build recorded them; a file with the same size and mtime is not read again
    (as git and make do). `claims_dir`: a folder."""
    claims_dir = Path(claims_dir)
    known = known or {}
    out = {}
    top = os.path.join(str(claims_dir), "")
    for rel, p in named_record_files(claims_dir):
        digest, stamp = known.get(rel, (None, None))
        if stamp is not None:
            try:
                st = os.stat(top + rel)  # the path's text made once here, not by the Path (a thousand files)
                if stamp == f"{st.st_size}:{st.st_mtime_ns}":
                    out[rel] = (p, digest)
                    continue
            except OSError:
                pass
        out[rel] = (p, file_digest(p))
    return out


def open_snapshot(claims_dir: Union[str, Path], db_path: Union[str, Path, None],
                  files: Optional[dict[str, tuple[Path, Optional[str]]]] = None, validators: bool = False
                  ) -> Optional[Snapshot]:
    """The database at db_path as an index of claims_dir, or None when it cannot serve as one (missing,
    unreadable, built before the _files table, or from another vocabulary or code). `validators`: with the
    validators it keeps (Snapshot.compiled)."""
    from .fingerprint import base_fingerprint  # the fingerprint imports the providers' versions: only when needed

    if db_path is None:
        return None
    claims_dir, db_path = Path(claims_dir), Path(db_path)
    if not db_path.is_file() or not claims_dir.is_dir():
        return None
    try:
        meta = read.meta(db_path)
        built = read.files(db_path)
    except sqlite3.Error:
        return None
    if meta.get("base") != base_fingerprint(claims_dir) or meta.get("claims_dir") != str(claims_dir.resolve()):
        return None
    if files is None:
        files = current_files(claims_dir, {rel: (digest, stamp) for rel, (digest, _, stamp) in built.items()})
    return Snapshot(db_path, claims_dir, meta, {rel: (digest, report) for rel, (digest, report, _) in built.items()},
                    files, compiled=load_validators(meta.get("compiled")) if validators else None)


class SnapshotContext:
    """The context `kb.checks.check` needs (records by report id, every report's summary), from a snapshot,
    leaving out the files being checked (real paths in `exclude`)."""

    def __init__(self, snapshot: Snapshot, exclude: set[str], stored_figures: bool = True):
        self.snapshot, self.exclude, self.stored_figures = snapshot, exclude, stored_figures

    def record(self, report_id: str) -> Optional[Loaded]:
        return self.snapshot.record(report_id, self.exclude)

    def summaries(self) -> list[Summary]:
        return self.snapshot.summaries(self.exclude)

    def read(self) -> list[Loaded]:
        return list(self.snapshot._loaded.values())

    def figures(self, refs: Iterable[str]) -> dict[str, StoredFigure]:
        return self.snapshot.figures(refs, self.exclude) if self.stored_figures else {}
