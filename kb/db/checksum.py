"""The checksum that proves a database holds the records' claims: sha256 per report over its claims' references
and figures, then over the reports' sums. A build checks the reports it wrote against the records; an update
keeps the other reports' sums (table _files)."""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Optional


def row(ref: str, text: Optional[str], low: Any, high: Any) -> str:
    f = lambda x: "" if x is None else repr(float(x))  # noqa: E731 - SQLite stores figures as REAL
    return f"{ref}\t{text or ''}\t{f(low)}\t{f(high)}"


def digest(rows: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def of_records(records) -> dict[str, tuple[str, int]]:
    """Report → (sha256 over its claims as the records hold them, number of claims)."""
    out = {}
    for rec in records:
        rows = [row(f"{rec.report.id}/{c.id}", c.value_text, *((c.low, c.high) if c.value is not None else (None,) * 2))
                for c in rec.report.claims]
        out[rec.report.id] = (digest(rows), len(rows))
    return out


def combine(digests: dict[str, tuple[str, int]]) -> str:
    lines = sorted(f"{report}\t{d}" for report, (d, _) in digests.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest() + f":{sum(n for _, n in digests.values())}"
