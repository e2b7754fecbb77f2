"""The sources' texts, kept in a cache outside claims/: what `kb sources fetch` downloaded (or `kb sources add`
was given), normalised, so that `kb reverify --offline` can check the quotes without the network.

The cache is a folder (default `.cache/` beside `claims/`, ignored by git; `--cache DIR` or KB_CACHE moves it):

    sources/REPORT/SOURCE/meta.json     the source's URL; the last fetch (day, outcome, HTTP status or error,
                                        ETag and Last-Modified, the version it resolved to, the current text's
                                        sha256); every text seen (version, first and last day seen, pages or
                                        sections)
    sources/REPORT/SOURCE/SHA256.txt    one normalised text (kb.sourcetext), named by its sha256
    reverify.json                       the last `kb reverify` results (kb.reverify)

Every text seen is kept, so a quote that left the current text can still be found in an earlier one (`moved`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Callable, Iterable, Optional, Union
from urllib.parse import urlsplit

from . import versions
from .model import Report, Source
from .sourcetext import SourceError, SourceText, from_bytes

ENV = "KB_CACHE"
FOLDER = ".cache"
META_VERSION = 1


def cache_dir(root: Union[str, Path], given: Union[str, Path, None] = None) -> Path:
    """The cache folder: `given`, else KB_CACHE, else .cache/ in the knowledge base's root (beside claims/)."""
    if given:
        return Path(given)
    env = os.environ.get(ENV)
    return Path(env) if env else Path(root) / FOLDER


def write_atomically(path: Path, text: str) -> None:
    """Write a file whole or not at all (a killed fetch leaves the last good copy)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CacheError(Exception):
    """A cache file that cannot be read (edited by hand, or written by another version)."""


@dataclass
class Copy:
    """One text of a source held in the cache."""

    sha256: str
    version: Optional[str]
    first_seen: str
    last_seen: str
    kind: str
    origin: str  # the URL it came from, or "file NAME" for a copy added by hand
    anchors: list

    def label(self) -> str:
        return self.version or f"the copy of {self.first_seen}"


class Entry:
    """The cache's record of one source: its copies and its last fetch."""

    def __init__(self, folder: Path, url: Optional[str]):
        self.folder, self.url = folder, url
        self.meta: dict = {"version": META_VERSION, "url": url, "last": None, "texts": {}}
        path = folder / "meta.json"
        if path.exists():
            try:
                meta = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(meta, dict) or not isinstance(meta.get("texts"), dict):
                    raise ValueError("not a cache entry")
            except (OSError, ValueError) as e:
                raise CacheError(f"{path}: cannot read ({e}); delete it and fetch again") from None
            # Copies of another URL say nothing about this one: a changed URL starts afresh.
            if meta.get("url") == url:
                self.meta = meta

    @property
    def last(self) -> Optional[dict]:
        return self.meta.get("last")

    def copies(self) -> list[Copy]:
        return [Copy(sha, t.get("version"), t.get("first_seen", ""), t.get("last_seen", ""), t.get("kind", "text"),
                     t.get("origin", ""), t.get("anchors", [])) for sha, t in self.meta["texts"].items()]

    def copy(self, sha: Optional[str]) -> Optional[Copy]:
        return next((c for c in self.copies() if c.sha256 == sha), None)

    def current(self) -> Optional[Copy]:
        """The text of the last fetch that succeeded (or of the copy added by hand)."""
        last = self.last or {}
        return self.copy(last.get("sha256"))

    def has_text(self, copy: Copy) -> bool:
        return (self.folder / f"{copy.sha256}.txt").is_file()

    def text(self, copy: Copy) -> SourceText:
        path = self.folder / f"{copy.sha256}.txt"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise CacheError(f"{path}: cannot read ({e.strerror or e}); fetch the source again") from None
        return SourceText(text, [tuple(a) for a in copy.anchors], copy.kind, copy.version)

    def keep(self, text: SourceText, day: date, origin: str, version: Optional[str], current: bool = True) -> str:
        """Hold a text (written once, by its sha256); with current, it is the source's text now. Returns what
        happened: new (the first text of this source), changed, unchanged."""
        sha = text.sha256
        texts = self.meta["texts"]
        previous = (self.last or {}).get("sha256")
        if sha not in texts:
            write_atomically(self.folder / f"{sha}.txt", text.text)
            texts[sha] = {"version": version, "first_seen": day.isoformat(), "kind": text.kind, "origin": origin,
                          "anchors": [list(a) for a in text.anchors]}
        elif version and not texts[sha].get("version"):
            texts[sha]["version"] = version
        texts[sha]["last_seen"] = day.isoformat()
        if not current:
            return "kept"
        return "new" if previous is None else "unchanged" if previous == sha else "changed"

    def record(self, day: date, outcome: str, **fields) -> None:
        """The last fetch: its day and outcome, and (status, error, etag, last_modified, version, sha256)."""
        last = {"day": day.isoformat(), "outcome": outcome, **fields}
        if outcome == "unreachable":  # the last good text stays the source's text, for the record
            last["sha256"] = (self.last or {}).get("sha256")
        self.meta["last"] = last

    def save(self) -> None:
        write_atomically(self.folder / "meta.json", json.dumps(self.meta, indent=1, sort_keys=True) + "\n")


class Cache:
    def __init__(self, folder: Union[str, Path]):
        self.folder = Path(folder)

    @property
    def results(self) -> Path:
        return self.folder / "reverify.json"

    def entry(self, report: str, source: Source) -> Entry:
        return Entry(self.folder / "sources" / report / source.id, source.url)


# Fetching.


@dataclass
class Fetched:
    """What `kb sources fetch` did for one source."""

    report: str
    source: str
    url: Optional[str]
    outcome: str  # new | changed | unchanged | new-version | unreachable | in-repository | added
    version: Optional[str] = None
    sha256: Optional[str] = None
    status: Optional[int] = None  # the HTTP status, when the server answered
    detail: str = ""

    @property
    def ref(self) -> str:
        return f"{self.report}/{self.source}"

    def as_dict(self) -> dict:
        return {"ref": self.ref, "url": self.url, "outcome": self.outcome, "version": self.version,
                "sha256": self.sha256, "status": self.status, "detail": self.detail}


def fetch_source(report: Report, source: Source, cache: Cache, fetcher, today: date) -> Fetched:
    """Download a source's current text into the cache (see kb.fetch for how carefully)."""
    from .fetch import FetchError

    if not source.url:
        return Fetched(report.id, source.id, None, "in-repository", detail=f"{source.path} is read from the repository")
    entry = cache.entry(report.id, source)
    before = (entry.last or {}).get("version")
    try:
        paper = versions.arxiv(source.url)
        if paper:
            outcome, version, status = _fetch_arxiv(paper, source, entry, fetcher, today)
        else:
            outcome, version, status = _fetch_page(source, entry, fetcher, today)
    except (FetchError, SourceError) as e:
        status = getattr(e, "status", None)
        detail = str(e)
        entry.record(today, "unreachable", status=status, error=detail)
        entry.save()
        return Fetched(report.id, source.id, source.url, "unreachable", status=status, detail=detail)
    if outcome == "changed" and before and version and before != version:
        outcome = "new-version"
    entry.save()
    current = entry.current()
    return Fetched(report.id, source.id, source.url, outcome, version, current.sha256 if current else None, status)


def _fetch_page(source: Source, entry: Entry, fetcher, today: date) -> tuple[str, Optional[str], int]:
    url = versions.fetch_url(source.url)
    current = entry.current()
    if current is not None and not entry.has_text(current):
        current = None  # its text was deleted: download it again rather than be told it is unchanged
    last = entry.last or {}
    validators = (last.get("etag"), last.get("last_modified")) if current else (None, None)
    r = fetcher.get(url, *validators)
    if r.status == 304 and current is not None:
        entry.keep(entry.text(current), today, current.origin, current.version)
        entry.record(today, "unchanged", status=304, etag=last.get("etag"), last_modified=last.get("last_modified"),
                     version=current.version, sha256=current.sha256)
        return "unchanged", current.version, 304
    text = from_bytes(r.body, r.headers.get("content-type"), name=urlsplit(r.url).path)
    version = versions.github_commit(source.url) or text.version
    outcome = entry.keep(text, today, r.url, version)
    entry.record(today, outcome, status=r.status, etag=r.headers.get("etag"),
                 last_modified=r.headers.get("last-modified"), version=version, sha256=text.sha256)
    return outcome, version, r.status


_VERSIONS = re.compile(r"\[v(\d+)\]")


def _fetch_arxiv(paper: versions.Arxiv, source: Source, entry: Entry, fetcher, today: date
                 ) -> tuple[str, Optional[str], int]:
    """An arXiv paper: its abstract page names the versions; the latest is read as a PDF (the abstract page holds
    only the abstract), and so is the version the record read, when it is another one. A version of an arXiv
    paper never changes, so one held already is not downloaded again."""
    mirror = fetcher.settings.arxiv_mirror.rstrip("/")
    page = fetcher.get(f"{mirror}/abs/{paper.id}")
    listed = sorted({int(n) for n in _VERSIONS.findall(from_bytes(page.body, page.headers.get("content-type"),
                                                                  name=".html").text)})
    latest = f"v{listed[-1]}" if listed else None
    held = {c.version: c for c in entry.copies() if c.version and entry.has_text(c)}
    status = page.status
    if latest and latest in held:
        copy = held[latest]
        sha, outcome = copy.sha256, entry.keep(entry.text(copy), today, copy.origin, latest)
    else:
        r = fetcher.get(f"{mirror}/pdf/{paper.id}{latest or ''}")
        text = from_bytes(r.body, r.headers.get("content-type"), name=".pdf")
        sha, outcome, status = text.sha256, entry.keep(text, today, r.url, latest), r.status
    entry.record(today, outcome, status=status, version=latest, sha256=sha)
    read = source.version or paper.version
    if read and read != latest and read not in held and versions.ARXIV_VERSION.match(read):
        r = fetcher.get(f"{mirror}/pdf/{paper.id}{read}")
        entry.keep(from_bytes(r.body, r.headers.get("content-type"), name=".pdf"), today, r.url, read, current=False)
    return outcome, latest, status


def add_copy(report: Report, source: Source, cache: Cache, file: Path, today: date,
             version: Optional[str] = None) -> Fetched:
    """Put the text of a source, read from a file (a copy you read: .txt, .md, .html or .pdf), into the cache as
    its current text, as if fetched today. Raises SourceError (or OSError) when the file cannot be read."""
    body = Path(file).read_bytes()
    text = from_bytes(body, name=Path(file).name)
    entry = cache.entry(report.id, source)
    outcome = entry.keep(text, today, f"file {Path(file).name}", version)
    entry.record(today, "added", version=version, sha256=text.sha256)
    entry.save()
    return Fetched(report.id, source.id, source.url, "added" if outcome != "unchanged" else "unchanged", version,
                   text.sha256)


def sources_of(reports: Iterable[Report]) -> list[tuple[Report, Source]]:
    return [(r, s) for r in reports for s in r.sources]


def fetch_all(reports: list[Report], cache: Cache, fetcher, today: date,
              progress: Optional[Callable] = None) -> list[Fetched]:
    pairs = sources_of(reports)
    return [fetch_source(r, s, cache, fetcher, today) for r, s in (progress(pairs) if progress else pairs)]
