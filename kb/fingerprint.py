"""Fingerprints: a hash of everything a build's rows depend on, so a build knows when it has nothing to do.

The base covers what every row depends on besides the record files: the schema's version, kb's own code and
data, the vocabulary, and the version of every verdict provider (its package's version and a hash of its files,
kb.providers): a change to the auditor is a new base, and the next build stores its new verdicts. The inputs
add each record file's sha256 and the day.
"""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path
from typing import Optional, Union

from . import __version__, providers
from .db.schema import SCHEMA_VERSION
from .load import vocabulary_path


def base_fingerprint(claims_dir: Union[str, Path]) -> str:
    h = hashlib.sha256(f"{SCHEMA_VERSION}\0{__version__}\0".encode())
    h.update(providers.code_hash("kb").encode())
    for name, version in providers.versions().items():
        h.update(f"\0{name}={version}".encode())
    try:
        h.update(vocabulary_path(claims_dir).read_bytes())
    except OSError as e:
        h.update(f"unreadable: {e}".encode())
    return h.hexdigest()


def inputs_fingerprint(base: str, today: date, files: dict[str, tuple[Path, Optional[str]]]) -> str:
    """The base, the day, and every record file's digest (files: relative path → (path, sha256))."""
    h = hashlib.sha256(f"{base}\0{today.isoformat()}\0".encode())
    for rel, (_, digest) in sorted(files.items()):
        # an unreadable file (a link to nothing) has no digest: validation reports why
        h.update(f"{rel}\0{digest or 'unreadable'}\0".encode())
    return h.hexdigest()
