"""The pipeline's first half in one call: files → records → checks. Commands and the auditor start here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from .checks import Checked, check
from .load import LoadResult, VocabularyError, load_paths, load_vocabulary, record_files, vocabulary_path
from .model import Vocabulary
from .problems import Problem

DEFAULT_CLAIMS = "claims"


@dataclass
class Validation:
    """What `kb validate` reports: the loaded records, the checks' findings, every problem."""

    loaded: LoadResult
    checked: Optional[Checked]
    vocabulary: Optional[Vocabulary]
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def unreadable(self) -> bool:
        return any(p.unreadable for p in self.problems)

    @property
    def claims(self) -> int:
        return sum(len(r.report.claims) for r in self.loaded.records)


def validate(
    paths: Iterable[Union[str, Path]] = (),
    claims_dir: Union[str, Path] = DEFAULT_CLAIMS,
    today: Optional[date] = None,
    progress: Any = None,
) -> Validation:
    """Validate record files (default: the whole claims folder).

    Records of the claims folder that are not among `paths` still serve as context, so a new record's formula
    may refer to claims of reports already in the knowledge base."""
    paths = [Path(p) for p in paths] or [Path(claims_dir)]
    try:
        vocabulary = load_vocabulary(vocabulary_path(claims_dir))
    except VocabularyError as e:
        return Validation(LoadResult(), None, None, e.problems)
    loaded = load_paths(paths, progress=progress)
    context = []
    own = {os.path.realpath(r.path) for r in loaded.records}
    if Path(claims_dir).is_dir():
        # realpath, not Path.resolve: a loop of symbolic links is a problem reported for its file, not a crash
        others = [f for f in record_files(claims_dir) if os.path.realpath(f) not in own]
        if others:
            context = load_paths(others).records
    checked = check(loaded.records, vocabulary, today=today, context=context)
    problems = sorted(loaded.problems + checked.problems, key=lambda p: (p.path, p.line or 0, p.col or 0))
    return Validation(loaded, checked, vocabulary, problems)
