"""Verdict providers: other packages (the auditor) registered under the entry-point group report_claims.verdicts,
whose verdicts `kb build` stores next to the declared judgements. kb never imports them by name.

A provider's version is its package's version and a hash of every file of its package, so a change to the
auditor changes the build's fingerprint and the next build stores the new verdicts.

The entry points are read from the distributions' metadata on sys.path as importlib.metadata reads them, without
importing it: it pulls in email, zipfile and csv, a tenth of a one-record command's start-up, and every command
that opens a database asks for the providers' versions (tests/test_providers.py holds the two ways equal).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Callable, Iterable, Optional

GROUP = "report_claims.verdicts"


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str  # "module:attribute"
    version: str  # its distribution's version

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> Callable:
        obj = import_module(self.module)
        attrs = self.value.partition(":")[2].split("[")[0].strip()  # "module:attr.attr [extras]"
        for attr in attrs.split(".") if attrs else ():
            obj = getattr(obj, attr)
        return obj


def _metadata_dirs(paths: Iterable[str]) -> Iterable[Path]:
    """Each distribution's metadata folder on the paths, the first of each name (as importlib.metadata finds
    them: a *.dist-info or *.egg-info folder; a zip on the path holds none of ours)."""
    seen = set()
    for entry in paths:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            low = n.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            name = re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0])
            if name not in seen:
                seen.add(name)
                yield Path(entry or ".", n)


def _sections(text: str) -> dict[str, list[tuple[str, str]]]:
    """An entry_points.txt: group → (name, value), comments and blank lines left out."""
    out: dict[str, list[tuple[str, str]]] = {}
    group = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            out.setdefault(group, [])
        elif group is not None and "=" in line:
            name, _, value = line.partition("=")
            out[group].append((name.strip(), value.strip()))
    return out


def _version(meta: Path) -> str:
    for file in ("METADATA", "PKG-INFO"):
        try:
            text = (meta / file).read_text(encoding="utf-8")
        except OSError:
            continue
        m = re.search(r"^Version:[ \t]*(.*?)\s*$", text, re.M)
        return m.group(1) if m else "?"
    return "?"


def entry_points(group: str = GROUP, paths: Optional[Iterable[str]] = None) -> list[EntryPoint]:
    """The entry points of a group, by name, of the distributions on sys.path (or `paths`)."""
    found = []
    for meta in _metadata_dirs(sys.path if paths is None else paths):
        try:
            text = (meta / "entry_points.txt").read_text(encoding="utf-8")
        except OSError:
            continue
        pairs = _sections(text).get(group)
        if pairs:
            version = _version(meta)
            found += [EntryPoint(name, value, version) for name, value in pairs]
    return sorted(found, key=lambda e: e.name)


def providers() -> list[tuple[str, Callable]]:
    """The installed providers, by entry point name, loaded."""
    return [(ep.name, ep.load()) for ep in entry_points()]


def versions() -> dict[str, str]:
    """Entry point name → "package version:sha256 of the package's files", without running the provider."""
    return {ep.name: f"{ep.version}:{code_hash(ep.module.split('.')[0])}" for ep in entry_points()}


def code_hash(package: str) -> str:
    """sha256 of every file of an importable package (its code and its data), in path order."""
    spec = find_spec(package)  # found, not imported
    roots = list(spec.submodule_search_locations or []) if spec else []
    h = hashlib.sha256()
    for root in roots:
        # os.walk, not rglob: the same files in the same order (folders' links not followed, files' links read; a
        # path's parts compared as sorted Paths compare them), without a Path and a stat per file
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            at = () if folder == root else tuple(os.path.relpath(folder, root).split(os.sep))
            files += [(at + (n,), os.path.join(folder, n)) for n in names
                      if n != "__pycache__" and os.path.splitext(n)[1] != ".pyc"]
        for parts, path in sorted(files):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    h.update("/".join(parts).encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()
