"""`kb reverify`: is every quote still in its source's text? One result per quoted claim:

- found: the quote is in the source's current text (and where: a page or a section);
- moved: not in the current text, but in another version of it (an earlier copy, or the version the record read);
- missing: in no text of the source held (drift: the words behind the figure are gone);
- source-changed: the quote is still there, but the source is a new version, or its text is not the one whose
  sha256 the record gives: read it again and update `version`/`sha256`;
- unreachable: the source's text could not be read (HTTP 4xx/5xx, a timeout, refused, or no copy in the cache),
  with the status.

A claim has drifted when its result is missing or moved: `kb cite` and `kb check` warn about it (and refuse it with
--strict), `kb build` stores the results (table `reverify`) and the site marks it. The last results are kept in the
cache folder (reverify.json); a result applies to a claim only while its quote and its source's URL, version and
sha256 are what they were when it was checked, so a corrected record is never shown the old drift.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from datetime import date
from pathlib import Path
from typing import Callable, Iterable, Optional

from . import versions
from .model import Claim, Report, Source
from .sources import Cache, CacheError, Entry, fetch_source, write_atomically
from .sourcetext import SourceError, SourceText, find, from_bytes

RESULTS = ("found", "moved", "missing", "source-changed", "unreachable")
DRIFTED = ("missing", "moved")
FILE_VERSION = 1


@dataclass
class Result:
    ref: str
    result: str  # one of RESULTS
    checked: str  # the day of the check (YYYY-MM-DD)
    source: str  # report/source
    version: Optional[str] = None  # the version of the text the quote was looked for in (or found in, when moved)
    where: Optional[str] = None  # page or section where the quote was found
    status: Optional[int] = None  # HTTP status of an unreachable source
    detail: str = ""
    basis: str = ""  # what was checked (basis_of): a result applies to a claim only while it is the same
    path: Optional[str] = None  # the record file and the claim's line, for annotations
    line: Optional[int] = None
    figure_read: Optional[bool] = None  # whether the claim's figure reads the same in its quote (for --stamp)

    @property
    def drifted(self) -> bool:
        return self.result in DRIFTED

    def why(self) -> str:
        """For a warning: what the last re-verification found."""
        return f"{self.result} on {self.checked}: {self.detail}"

    def as_dict(self) -> dict:
        return asdict(self)


def basis_of(claim: Claim, source: Optional[Source]) -> str:
    """A digest of what a result depends on: the quote as written and the source's URL, path, version, sha256."""
    s = source
    parts = [claim.quote, claim.quote_kind, s.url if s else None, s.path if s else None, s.version if s else None,
             s.sha256 if s else None]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


class ResultsError(Exception):
    pass


class Results:
    """The last kb reverify results, by claim reference."""

    def __init__(self, results: Iterable[Result] = (), digest: str = ""):
        self.by_ref = {r.ref: r for r in results}
        self.digest = digest  # of the results file: a build is redone when it changes

    @classmethod
    def load(cls, path: Path) -> "Results":
        """The results saved at path; none when there is no such file. Raises ResultsError naming the file when
        it cannot be read."""
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            return cls()
        except OSError as e:
            raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
        try:
            data = json.loads(raw)
            names = {f.name for f in fields(Result)}
            results = [Result(**{k: v for k, v in r.items() if k in names}) for r in data["results"]]
            if any(r.result not in RESULTS for r in results):
                raise ValueError("a result that is not one of " + ", ".join(RESULTS))
        except (ValueError, KeyError, TypeError) as e:
            raise ResultsError(f"{path}: not the results of kb reverify ({e}); delete it and run kb reverify") from None
        return cls(results, hashlib.sha256(raw).hexdigest())

    def applying(self, ref: str, claim: Claim, source: Optional[Source]) -> Optional[Result]:
        """The result for a claim as it is now written, if it was checked so."""
        r = self.by_ref.get(ref)
        return r if r is not None and r.basis == basis_of(claim, source) else None

    def __len__(self) -> int:
        return len(self.by_ref)


def save(path: Path, results: list[Result], today: date, replaced_reports: Optional[set[str]] = None) -> None:
    """Save results; with replaced_reports (a run on some reports), the earlier results of the other reports are
    kept."""
    kept: list[Result] = []
    if replaced_reports is not None:
        try:
            kept = [r for r in Results.load(path).by_ref.values() if r.ref.split("/")[0] not in replaced_reports]
        except ResultsError:
            kept = []
    everything = sorted(kept + results, key=lambda r: r.ref)
    write_atomically(Path(path), json.dumps({"version": FILE_VERSION, "saved": today.isoformat(),
                                             "results": [r.as_dict() for r in everything]}, indent=1) + "\n")


# Checking.


@dataclass
class _Texts:
    """A source's texts as a check sees them: the current one (with its version and sha256), the others held,
    or why there is none."""

    current: Optional[SourceText] = None
    version: Optional[str] = None
    sha256: Optional[str] = None
    label: str = ""  # "paper (v3, fetched 2026-12-01)"
    others: tuple[tuple[str, SourceText], ...] = ()  # (label, text) of every other text held
    error: Optional[str] = None
    status: Optional[int] = None


def _from_cache(report: Report, source: Source, cache: Cache) -> _Texts:
    entry: Entry = cache.entry(report.id, source)
    last = entry.last
    current = entry.current()
    if last is None or (current is None and last.get("outcome") != "unreachable"):
        return _Texts(error=f"no copy of {source.id} in the cache ({cache.folder}): run kb sources fetch, or kb "
                            f"sources add {report.id}/{source.id} FILE")
    if last.get("outcome") == "unreachable":
        status = last.get("status")
        return _Texts(error=f"{source.id} could not be read on {last.get('day')}: {last.get('error')}", status=status)
    text = entry.text(current)
    how = "added" if last.get("outcome") == "added" else "fetched"
    version = current.version
    label = f"{source.id} ({version + ', ' if version else ''}{how} {last.get('day')})"
    others = tuple((c.label(), entry.text(c)) for c in entry.copies() if c.sha256 != current.sha256)
    return _Texts(text, version, current.sha256, label, others)


def _from_repository(source: Source, root: Path) -> _Texts:
    path = root / source.path
    try:
        text = from_bytes(path.read_bytes(), name=path.name)
    except (OSError, SourceError) as e:
        return _Texts(error=f"{source.path}: cannot read: {getattr(e, 'strerror', None) or e}")
    return _Texts(text, None, text.sha256, f"{source.id} ({source.path})")


def _record_version(source: Source) -> Optional[str]:
    paper = versions.arxiv(source.url)
    return source.version or (paper.version if paper else None) or versions.github_commit(source.url)


def _same_version(a: str, b: str) -> bool:
    return versions.same_commit(a, b) if versions.is_commit(a) and versions.is_commit(b) else a == b


def judge(claim: Claim, source: Source, texts: _Texts) -> tuple[str, dict]:
    """The result for one quoted claim, and its fields (version, where, status, detail)."""
    if texts.error:
        return "unreachable", {"status": texts.status, "detail": texts.error}
    table = claim.quote_kind == "table"
    found = find(claim.quote or "", texts.current, table)
    if found:
        changed = []
        read = _record_version(source)
        if read and texts.version and not _same_version(read, texts.version):
            changed.append(f"the record read {read}, the source is now {texts.version}")
        if source.sha256 and texts.sha256 and source.sha256 != texts.sha256:
            changed.append(f"its text's sha256 is now {texts.sha256[:12]}…, not the record's {source.sha256[:12]}…")
        where = f", {found.where}" if found.where else ""
        if changed:
            return "source-changed", {"version": texts.version, "where": found.where,
                                      "detail": f"found in {texts.label}{where}, but {'; '.join(changed)}"}
        return "found", {"version": texts.version, "where": found.where, "detail": f"found in {texts.label}{where}"}
    for label, other in texts.others:
        moved = find(claim.quote or "", other, table)
        if moved:
            where = f", {moved.where}" if moved.where else ""
            return "moved", {"version": other.version or texts.version, "where": moved.where,
                             "detail": f"not in {texts.label}; found in {label}{where}"}
    elsewhere = f" nor in {len(texts.others)} earlier cop{'y' if len(texts.others) == 1 else 'ies'}" \
        if texts.others else ""
    return "missing", {"version": texts.version, "detail": f"not in {texts.label}{elsewhere}"}


def figure_reads_the_same(claim: Claim, units) -> Optional[bool]:
    """Whether the claim's figure can be read in its quote (None for a claim without a figure)."""
    from .docs import figures_in, matches

    if claim.value is None:
        return None
    return any(matches(w, claim, units) for w in figures_in(claim.quote or ""))


def quoted(report: Report) -> list[tuple[int, Claim, Source]]:
    """The claims of a report that quote a source it defines: (index, claim, source)."""
    out = []
    for i, c in enumerate(report.claims):
        s = report.source(c.source) if c.source else None
        if c.quote and s is not None:
            out.append((i, c, s))
    return out


def reverify(records: list, cache: Cache, root: Path, today: date, vocabulary, fetcher=None,
             progress: Optional[Callable] = None) -> tuple[list[Result], list]:
    """Check every quoted claim of the records (kb.load.Loaded) against its source's text: fetched now with
    `fetcher` (kb.fetch.Fetcher), or from the cache without one (offline). Returns the results and, when
    fetching, what each fetch did (kb.sources.Fetched)."""
    from .units import index as unit_index

    units = unit_index(vocabulary)
    results, fetched = [], []
    work = [(rec, s) for rec in records for s in rec.report.sources
            if any(src is s for _, _, src in quoted(rec.report))]
    for rec, source in (progress(work) if progress else work):
        r = rec.report
        if source.path and not source.url:
            texts = _from_repository(source, root)
        else:
            if fetcher is not None:
                fetched.append(fetch_source(r, source, cache, fetcher, today))
            try:
                texts = _from_cache(r, source, cache)
            except CacheError as e:
                texts = _Texts(error=str(e))
        for i, claim, s in quoted(r):
            if s is not source:
                continue
            result, found = judge(claim, source, texts)
            line = rec.where("claims", i, "quote")[0]
            results.append(Result(f"{r.id}/{claim.id}", result, today.isoformat(), f"{r.id}/{source.id}",
                                  basis=basis_of(claim, source), path=rec.path, line=line,
                                  figure_read=figure_reads_the_same(claim, units) if result == "found" else None,
                                  **found))
    return results, fetched


def exit_code(results: list[Result]) -> int:
    """0 every quote found, 1 drift (anything else: moved, missing, source-changed, unreachable), 2 nothing could
    be checked (no quoted claim, or no source could be read)."""
    if not results or all(r.result == "unreachable" for r in results):
        return 2
    return 0 if all(r.result == "found" for r in results) else 1


def counts(results: list[Result]) -> dict[str, int]:
    return {k: sum(r.result == k for r in results) for k in RESULTS}


# Output.


def as_text(r: Result) -> str:
    where = f"{r.path}:{r.line}: " if r.path else ""
    return f"{where}{r.result}: {r.ref}: {r.detail}"


def as_annotation(r: Result) -> Optional[str]:
    """A GitHub Actions warning on the claim's quote, for every result but found."""
    if r.result == "found":
        return None
    from .problems import _escape_data, _escape_prop

    props = [f"file={_escape_prop(r.path or '')}"] + ([f"line={r.line}"] if r.line else []) + \
        [f"title={_escape_prop(f'reverify: {r.result}')}"]
    return f"::warning {','.join(props)}::{_escape_data(f'{r.ref}: {r.detail}')}"


def as_markdown(results: list[Result], today: date) -> str:
    """The drift as a Markdown list (the scheduled workflow's issue body)."""
    c = counts(results)
    summary = ", ".join(f"{n} {k}" for k, n in c.items() if n)
    drift = [r for r in results if r.result != "found"]
    out = [f"## Quotes re-verified against their sources on {today.isoformat()}", "",
           f"{len(results)} quoted claims: {summary or 'none'}.", ""]
    if not drift:
        return "\n".join(out + ["Every quote was found in its source's current text.", ""])
    out += ["| claim | result | where in the record | what was found |", "| --- | --- | --- | --- |"]
    order = {k: i for i, k in enumerate(("missing", "moved", "unreachable", "source-changed"))}
    for r in sorted(drift, key=lambda r: (order.get(r.result, 9), r.ref)):
        detail = r.detail.replace("|", "\\|")
        out.append(f"| `{r.ref}` | **{r.result}** | `{r.path}:{r.line}` | {detail} |")
    out += ["", "What each result means, and what to do: README.md, \"Re-verifying quotes\"."]
    return "\n".join(out) + "\n"


def as_json(results: list[Result], today: date, offline: bool, fetched: list, stamped: list[str]) -> str:
    return json.dumps({"version": FILE_VERSION, "checked": today.isoformat(), "offline": offline,
                       "exit": exit_code(results), "counts": counts(results),
                       "results": [r.as_dict() for r in results], "fetched": [f.as_dict() for f in fetched],
                       "stamped": stamped}, indent=2)
