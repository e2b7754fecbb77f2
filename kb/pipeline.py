"""The pipeline's first half in one call: files → records → checks. Commands and the auditor start here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from .checks import Checked, Context, RecordsContext, check
from .load import LoadResult, VocabularyError, load_paths, load_vocabulary, record_files, vocabulary_path
from .model import Vocabulary
from .problems import Problem
from .snapshot import Snapshot, SnapshotContext, open_snapshot

@dataclass
class Validation:
    """What `kb validate` reports: the loaded records, the checks' findings, every problem."""

    loaded: LoadResult
    checked: Optional[Checked]
    vocabulary: Optional[Vocabulary]
    problems: list[Problem]
    context: Optional[Context] = None  # the rest of the knowledge base, when only some records were validated
    claims_dir: Optional[Path] = None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def unreadable(self) -> bool:
        return any(p.unreadable for p in self.problems)

    @property
    def context_records(self) -> list:
        """The records of the rest of the knowledge base that were read (those a formula refers to, at least)."""
        return self.context.read() if self.context is not None else []

    @property
    def claims(self) -> int:
        return sum(len(r.report.claims) for r in self.loaded.records)


def validate(
    paths: Iterable[Union[str, Path]] = (),
    claims_dir: Union[str, Path, None] = "claims",
    today: Optional[date] = None,
    progress: Any = None,
    db: Union[str, Path, Snapshot, None] = None,
) -> Validation:
    """Validate record files (default: the whole claims folder).

    Records of the claims folder that are not among `paths` still serve as context, so a new record's formula
    may refer to claims of reports already in the knowledge base. With `db`, a database built from the claims
    folder, the context comes from it for the files that have not changed since (kb.snapshot), and only the
    files a formula refers to are read. With claims_dir None (no knowledge base), `paths` are validated alone
    against the packaged vocabulary."""
    given = bool(paths)
    folder = Path(claims_dir) if claims_dir is not None else None
    paths = [Path(p) for p in paths] or ([folder] if folder is not None else [])
    try:
        vocabulary = load_vocabulary(vocabulary_path(folder))
    except VocabularyError as e:
        return Validation(LoadResult(), None, None, e.problems, claims_dir=folder)
    loaded = load_paths(paths, progress=progress)
    context: Context = RecordsContext()
    # realpath, not Path.resolve: a loop of symbolic links is a problem reported for its file, not a crash
    own = {os.path.realpath(r.path) for r in loaded.records + loaded.salvaged}
    snapshot = None
    if given and folder is not None:
        snapshot = db if isinstance(db, Snapshot) else open_snapshot(folder, db)
    if snapshot is not None:
        context = SnapshotContext(snapshot, own)
    elif folder is not None and folder.is_dir():
        others = [f for f in record_files(folder) if os.path.realpath(f) not in own]
        if others:
            context = RecordsContext(load_paths(others).records)
    # salvaged records (values that are not valid, replaced by stand-ins) are checked for their other problems
    checked = check(loaded.records + loaded.salvaged, vocabulary, today=today, context=context)
    problems = sorted(loaded.problems + checked.problems, key=lambda p: (p.path, p.line or 0, p.col or 0))
    return Validation(loaded, checked, vocabulary, problems, context, folder)
