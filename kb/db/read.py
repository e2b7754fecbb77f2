"""Readers of a built database: what one-record commands, updates and the auditor ask of the last build. Every
query against the tables' columns outside the build itself is here, next to the schema it depends on."""

from __future__ import annotations

import json
import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Iterable, Optional, Union

from ..duplicates import Summary
from . import checksum
from .schema import META

Path_ = Union[str, Path]


def connect(db_path: Path_) -> sqlite3.Connection:
    """A read-only connection."""
    return sqlite3.connect(f"file:{Path(db_path).resolve()}?mode=ro", uri=True)


def _all(db_path: Path_, sql: str, params: Iterable = ()) -> list[tuple]:
    conn = connect(db_path)
    try:
        return conn.execute(sql, tuple(params)).fetchall()
    finally:
        conn.close()


def table_names(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]


def count(conn: sqlite3.Connection, table: str) -> int:
    return conn.execute(f'select count(*) from "{table}"').fetchone()[0]


def meta_of(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute(f"select key, value from {META}").fetchall())


def meta(db_path: Path_) -> dict[str, str]:
    """The _meta table of a built database, or {} when there is none or it cannot be read."""
    try:
        conn = connect(db_path)
        try:
            return meta_of(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return {}


def files(db_path: Path_) -> dict[str, tuple[str, str, Optional[str]]]:
    """Relative path → (sha256, report id, stamp) of the record files the database was built from; {} when it
    cannot tell. Raises sqlite3.Error when the database cannot be read."""
    return {rel: (digest, report, stamp) for rel, digest, report, stamp in
            _all(db_path, "select path, sha256, report, stamp from _files")}


def recorded_files(db_path: Path_) -> dict[str, tuple[str, Optional[str]]]:
    """Relative path → (sha256, stamp) as the last build recorded them ({} when it cannot tell)."""
    try:
        return {rel: (digest, stamp) for rel, (digest, _, stamp) in files(db_path).items()}
    except sqlite3.Error:
        return {}


def summaries(db_path: Path_) -> list[Summary]:
    """Every report as near duplicates are told apart (the title's line in its file included)."""
    return [Summary(id_, title, organization, tuple(json.loads(models or "[]")), path, title_line)
            for id_, title, organization, models, path, title_line in
            _all(db_path, "select id, title, organization, models, path, title_line from reports")]


def formula_users(db_path: Path_, report_ids: Iterable[str]) -> dict[str, set[str]]:
    """Claim reference of the given reports → the other reports whose formulas use it."""
    ids = sorted(set(report_ids))
    if not ids:
        return {}
    # a LIKE per report narrows the rows to parse (an _ in an id matching any character only lets more
    # through); the JSON check below is the exact one
    where = " or ".join(["inputs like ?"] * len(ids))
    uses: dict[str, set[str]] = {}
    wanted = set(ids)
    for report, inputs in _all(db_path, f"select report, inputs from derived_checks where {where}",
                               [f'%"{i}/%' for i in ids]):
        for ref in json.loads(inputs):
            owner = ref.rpartition("/")[0]
            if owner in wanted and owner != report:
                uses.setdefault(ref, set()).add(report)
    return uses


def formulas_see(db_path: Path_, refs: Iterable[str]) -> dict[str, tuple]:
    """What a formula elsewhere sees of each claim, as stored: figure as written, low, high, status, formula,
    citable, drift (kb.store compares it with the records')."""
    return {ref: tuple(rest) for ref, *rest in _all(
        db_path, "select ref, value_text, low, high, status, formula, citable, drift from claims "
                 "where ref in (select value from json_each(?))", (json.dumps(sorted(refs)),))}


def gone_stale(db_path: Path_, since: date, today: date, max_age: int) -> set[str]:
    """The reports with a confirmed or secondary claim that was citable on `since` and is stale `today`
    (checked before today - max_age, on or after since - max_age)."""
    if today <= since:
        return set()
    return {r for (r,) in _all(
        db_path, "select distinct report from claims where status in ('confirmed', 'secondary') and verified >= ? "
                 "and verified < ?", ((since - timedelta(days=max_age)).isoformat(),
                                      (today - timedelta(days=max_age)).isoformat()))}


# The verdicts of training reports (those with models or judgements), declared where a judgement was recorded,
# else the provider's.
_VERDICTS = ("from verdicts v join reports r on r.id = v.report where v.provider = ? and (r.models != '[]' or "
             "exists (select 1 from disclosures d where d.report = r.id))")


def verdicts(db_path: Path_, provider: str, report: Optional[str] = None) -> dict[str, dict[str, str]]:
    """Report → omission → status, for the training reports (or only `report`)."""
    sql = f"select v.report, v.omission, coalesce(v.declared, v.audited) {_VERDICTS}"
    params: tuple = (provider,)
    if report is not None:
        sql, params = sql + " and v.report = ?", (provider, report)
    table: dict[str, dict[str, str]] = {}
    for report_id, omission, status in _all(db_path, sql, params):
        table.setdefault(report_id, {})[omission] = status
    return table


def verdict_counts(db_path: Path_, provider: str, leave_out: Iterable[str] = ()) -> dict[tuple[str, str], int]:
    """(omission, status) → how many training reports have it, but those in leave_out (counted in the database,
    not in Python: a knowledge base's cohorts for one audit)."""
    return {(omission, status): n for omission, status, n in _all(
        db_path, f"select v.omission, coalesce(v.declared, v.audited), count(*) {_VERDICTS} and v.report not in "
                 "(select value from json_each(?)) group by 1, 2", (provider, json.dumps(sorted(leave_out))))}


def claim_digests(conn: sqlite3.Connection, reports: Optional[set[str]] = None) -> dict[str, tuple[str, int]]:
    """Report → (checksum of its claims as the claims table holds them, number of claims)."""
    by_report: dict[str, list[str]] = {}
    if reports is None:
        rows = conn.execute("select report, ref, value_text, low, high from claims")
    else:
        rows = conn.execute("select report, ref, value_text, low, high from claims where report in "
                            "(select value from json_each(?))", (json.dumps(sorted(reports)),))
    for report, *row in rows:
        by_report.setdefault(report, []).append(checksum.row(*row))
    found = {report: (checksum.digest(rows), len(rows)) for report, rows in by_report.items()}
    everyone = reports if reports is not None else {r for (r,) in conn.execute("select id from reports")}
    for report in everyone:  # a report with no claims has none in the table
        found.setdefault(report, (checksum.digest([]), 0))
    return found


def written(db_path: Path_, reports: set[str]) -> tuple[dict[str, tuple[str, int]], dict[str, tuple[str, int]], int]:
    """What a database just written holds, to check it against the records: the checksums of the given reports'
    claims as the claims table holds them, every report's (checksum, claims) as _files records them, and the
    claims table's row count."""
    conn = sqlite3.connect(str(db_path))
    try:
        found = claim_digests(conn, reports)
        stored = {report: (digest, n) for report, digest, n in
                  conn.execute("select report, checksum, claims from _files")}
        return found, stored, count(conn, "claims")
    finally:
        conn.close()


def database_checksum(db_path: Path_) -> str:
    """The checksum of every claim, computed from what the database holds."""
    conn = connect(db_path)
    try:
        return checksum.combine(claim_digests(conn))
    finally:
        conn.close()
