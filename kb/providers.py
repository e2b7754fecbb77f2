"""Verdict providers: other packages (the auditor) registered under the entry-point group report_claims.verdicts,
whose verdicts `kb build` stores next to the declared judgements. kb never imports them by name.

A provider's version is its package's version and a hash of every file of its package, so a change to the
auditor changes the build's fingerprint and the next build stores the new verdicts.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

GROUP = "report_claims.verdicts"


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name)


def providers() -> list[tuple[str, Callable]]:
    """The installed providers, by entry point name, loaded."""
    return [(ep.name, ep.load()) for ep in _entry_points()]


def versions() -> dict[str, str]:
    """Entry point name → "package version:sha256 of the package's files", without running the provider."""
    out = {}
    for ep in _entry_points():
        top = ep.module.split(".")[0]
        dist = ep.dist.version if ep.dist is not None else "?"
        out[ep.name] = f"{dist}:{code_hash(top)}"
    return out


def code_hash(package: str) -> str:
    """sha256 of every file of an importable package (its code and its data), in path order."""
    spec = find_spec(package)  # found, not imported
    roots = list(spec.submodule_search_locations or []) if spec else []
    h = hashlib.sha256()
    for root in map(Path, roots):
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
