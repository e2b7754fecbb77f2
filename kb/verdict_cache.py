"""Verdicts kept between builds: a provider's verdicts on a record depend only on the provider's code, the
vocabulary and the record file's bytes, so a build that finds them under that key reads them instead of
auditing the report again. A fresh clone's build is cold; with this cache (CI keeps `.cache/` between runs) it
audits only the records that changed.

Layout: CACHE/verdicts/PROVIDER/AB/KEY.json, KEY = sha256(provider version, vocabulary, record digest). Files
are written whole and renamed into place; a cache that cannot be read or written is ignored, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

FORMAT = "1"  # of the cached files: a change makes every old file a miss


class VerdictCache:
    def __init__(self, folder: Path, vocabulary_digest: str):
        self.folder = Path(folder) / "verdicts"
        self.vocabulary_digest = vocabulary_digest
        self.hits = self.misses = 0

    def key(self, provider_version: str, record_digest: str) -> str:
        return hashlib.sha256(f"{FORMAT}\0{provider_version}\0{self.vocabulary_digest}\0{record_digest}".encode()
                              ).hexdigest()

    def _path(self, provider: str, key: str) -> Path:
        return self.folder / provider / key[:2] / f"{key}.json"

    def get(self, provider: str, key: str) -> Optional[list[dict]]:
        try:
            rows = json.loads(self._path(provider, key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            self.misses += 1
            return None
        self.hits += 1
        return rows

    def put(self, provider: str, key: str, rows: list[dict]) -> None:
        path = self._path(provider, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(rows, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or full disk: the next build audits again


def vocabulary_digest(vocabulary) -> str:
    return hashlib.sha256(vocabulary.model_dump_json().encode()).hexdigest()
