"""The pipeline's first half in one call: files → records → checks. Commands and the auditor start here.

Two calls, two meanings: `validate_kb` checks a whole knowledge base; `validate_files` checks some record files
against the rest of a knowledge base (the context: what a formula may refer to, what a new report may
duplicate), taken from the last built database where it can be.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union

from .checks import Checked, Context, RecordsContext, check
from .load import LoadResult, Loaded, VocabularyError, load_paths, load_vocabulary, record_files, vocabulary_path
from .problems import Problem
from .snapshot import Snapshot, SnapshotContext, open_snapshot

if TYPE_CHECKING:
    from .compiled import Compiled
    from .model import Vocabulary


@dataclass
class Validation:
    """What `kb validate` reports: the loaded records, the checks' findings, every problem. `checked` and
    `vocabulary` are None only when the vocabulary itself could not be read (its problems are the problems)."""

    loaded: LoadResult
    checked: Optional[Checked]
    vocabulary: Optional[Vocabulary]
    problems: list[Problem]
    context: Context = field(default_factory=RecordsContext)  # the rest of the knowledge base, for some files
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
        return self.context.read()

    @property
    def claims(self) -> int:
        return sum(len(r.report.claims) for r in self.loaded.records)


def vocabulary_of(claims_dir: Optional[Path], compiled: Optional[Compiled] = None) -> Union[Vocabulary, Validation]:
    """The knowledge base's vocabulary, or the Validation that reports why it cannot be read. `compiled`:
    kb.load.load_vocabulary's."""
    try:
        return load_vocabulary(vocabulary_path(claims_dir), compiled)
    except VocabularyError as e:
        return Validation(LoadResult(), None, None, e.problems, claims_dir=claims_dir)


def _checked(loaded: LoadResult, vocabulary: Vocabulary, today: Optional[date], context: Context,
             claims_dir: Optional[Path], alike: bool = True) -> Validation:
    # salvaged records (values that are not valid, replaced by stand-ins) are checked for their other problems
    checked = check(loaded.records + loaded.salvaged, vocabulary, today=today, context=context, alike=alike)
    problems = sorted(loaded.problems + checked.problems, key=lambda p: (p.path, p.line or 0, p.col or 0))
    return Validation(loaded, checked, vocabulary, problems, context, claims_dir)


def validate_kb(claims_dir: Union[str, Path], today: Optional[date] = None, progress: Any = None,
                compact: bool = False, vocabulary: Optional[Vocabulary] = None,
                on_record: Optional[Callable[[Loaded], Any]] = None) -> Validation:
    """Validate every record of a knowledge base (`compact`, `on_record`: kb.load.load_paths's). `vocabulary`: the
    knowledge base's, where the caller has read it already (vocabulary_of)."""
    folder = Path(claims_dir)
    if vocabulary is None:
        vocabulary = vocabulary_of(folder)
        if isinstance(vocabulary, Validation):
            return vocabulary
    return _checked(load_paths([folder], progress=progress, compact=compact, on_record=on_record), vocabulary, today,
                    RecordsContext(), folder)


def validate_files(
    paths: Iterable[Union[str, Path]],
    claims_dir: Union[str, Path, None],
    today: Optional[date] = None,
    progress: Any = None,
    db: Union[str, Path, Snapshot, None] = None,
    vocabulary: Optional[Vocabulary] = None,
    read_inputs: bool = False,
    alike: bool = True,
    all_positions: bool = False,
) -> Validation:
    """Validate record files (or folders of them) against the rest of the knowledge base at claims_dir: its
    records serve as context, so a new record's formula may refer to their claims and a new report is compared
    with them. With `db`, a database built from claims_dir, the context comes from it for the files unchanged
    since it was built (kb.snapshot); a formula takes the figures other records state from it too, and only the
    files of the derived figures it refers to are read (all of them with `read_inputs`: the update of a build
    indexes those records). With claims_dir None (no knowledge base), the files are validated alone against the
    packaged vocabulary. `vocabulary`: the one of claims_dir, where the caller has read it already. `alike`:
    kb.checks.check's (False: no warnings of reports or claims alike). `all_positions`: kb.load.load_file's."""
    folder = Path(claims_dir) if claims_dir is not None else None
    snapshot = None
    if folder is not None:
        snapshot = db if isinstance(db, Snapshot) else open_snapshot(folder, db, validators=True)
    # the validators the database keeps, where it has them: no pydantic models for valid files (kb.compiled)
    compiled = snapshot.compiled if snapshot is not None else None
    if vocabulary is None:
        vocabulary = vocabulary_of(folder, compiled)
        if isinstance(vocabulary, Validation):
            return vocabulary
    loaded = load_paths([Path(p) for p in paths], progress=progress, compiled=compiled, all_positions=all_positions)
    context: Context = RecordsContext()
    # realpath, not Path.resolve: a loop of symbolic links is a problem reported for its file, not a crash
    own = {os.path.realpath(r.path) for r in loaded.records + loaded.salvaged}
    if snapshot is not None:
        context = SnapshotContext(snapshot, own, stored_figures=not read_inputs)
    elif folder is not None and folder.is_dir():
        others = [f for f in record_files(folder) if os.path.realpath(f) not in own]
        if others:
            context = RecordsContext(load_paths(others).records)
    return _checked(loaded, vocabulary, today, context, folder, alike)
