"""Writing the database: every table of the schema with its rows, indexes, views and full-text index (a new
database), or the rows of some reports replaced in a copy of the last one (an update)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import date
from operator import itemgetter
from pathlib import Path
from typing import Iterable, Optional

from . import checksum, read, schema
from .rows import Verdicts, table_rows

# What an update deletes, children before parents (foreign keys are enforced as it goes).
_REPORT_ROWS = ["reverify", "claim_patterns", "claim_topics", "chart_points", "derived_checks", "verdicts",
                "disclosures", "_files", "claims", "sources"]


class IntegrityError(Exception):
    pass


@dataclass
class Written:
    counts: dict[str, int]  # rows per table
    checksum: str  # of every report's claims as the database holds them (kb.db.checksum.combine)


def holds_claims(path: Path, digests: dict[str, tuple[str, int]]) -> str:
    """Check that the database at path holds the claims the records hold (`digests`: kb.db.checksum.of_records),
    and that its count of claims is every report's; the checksum of every report's claims."""
    found, stored, total = read.written(path, set(digests))
    if found != digests or sum(n for _, n in stored.values()) != total:
        differ = {report for report, _ in set(found.items()) ^ set(digests.items())}
        raise IntegrityError(f"the written database does not hold the records' claims ({total} claims; the "
                             f"checksums of {len(differ)} report{'s' * (len(differ) != 1)} differ)")
    return checksum.combine(stored)


def _insert(conn: sqlite3.Connection, name: str, rows: Iterable[dict]) -> int:
    # Plain executemany: the rows hold only text, numbers and None (lists are JSON already), and sqlite-utils'
    # insert_all spends most of a build's writing time converting them.
    # Each row has exactly its table's columns (tests/test_schema.py): itemgetter takes them in C, sooner than a
    # row.get a column (every table has several columns, so it gives a tuple).
    columns = schema.table(name).column_names
    sql = (f'insert into "{name}" ({", ".join(f"[{c}]" for c in columns)}) '
           f'values ({", ".join("?" * len(columns))})')
    return conn.executemany(sql, map(itemgetter(*columns), rows)).rowcount


def write_database(path: Path, result, today: date, fs_now_ns: int, reverify=None,
                   verdicts: Optional[Verdicts] = None) -> Written:
    """Write every table, index and view into a fresh database at path (with the last kb reverify results, if
    any, and the records' verdicts: kb.db.rows.Verdicts), and check it holds the records' claims."""
    import sqlite_utils

    digests = checksum.of_records(result.loaded.records)
    # the verdicts may be audited in child processes while the rest is written: their table comes last
    rows = table_rows(result, today, fs_now_ns, reverify, verdicts=verdicts, digests=digests)
    counts: dict[str, int] = {}
    db = sqlite_utils.Database(path, recreate=True)
    db.execute("pragma journal_mode = off")
    db.execute("pragma synchronous = off")
    # No transaction or journal is needed for atomicity: nobody sees this file until it is renamed. The references
    # are checked once every row is in (pragma foreign_key_check, below): checked at each insert, as
    # foreign_keys = on does, the inserts took about 15% longer, and a broken one stopped the build with SQLite's
    # message instead of ours.
    def write(t: schema.Table) -> None:
        db[t.name].create(t.types, pk=t.pk, foreign_keys=t.foreign_keys or None,
                          not_null=set([t.pk] if isinstance(t.pk, str) else t.pk))
        with db.conn:
            counts[t.name] = _insert(db.conn, t.name, rows[t.name]())
        for columns in t.indexes:
            db[t.name].create_index(list(columns), if_not_exists=True)

    for t in schema.TABLES:
        if t.name != "verdicts":  # nothing refers to verdicts
            write(t)
    db.create_view("omission_matrix", schema.omission_matrix_sql(result.vocabulary.omission_ids))
    for name, sql in schema.VIEWS.items():
        db.create_view(name, sql)
    for t in schema.TABLES:
        if t.fts:
            db[t.name].enable_fts(list(t.fts), tokenize="porter")
    # What can be checked and measured before the verdicts is, while they may still be audited on the other core:
    # done after them, it took the last 1.5 s of a large build with that core idle.
    _check_references(db.conn)
    db.execute("analyze")
    written = holds_claims(path, digests)
    write(schema.table("verdicts"))
    _check_references(db.conn, "verdicts")
    db.execute("analyze verdicts")
    db.close()
    return Written(counts, written)


def _check_references(conn: sqlite3.Connection, only: str = "") -> None:
    """Every reference of the database's rows (of table `only`'s) holds, else IntegrityError naming the first five."""
    violations = conn.execute(f"pragma foreign_key_check{f'({only})' if only else ''}").fetchall()
    if violations:
        broken = "; ".join(f"a {table} row (rowid {rowid}) refers to no {parent} row"
                           for table, rowid, parent, _ in violations[:5])
        raise IntegrityError(f"foreign keys do not hold in the written database: {broken}")


def update_database(path: Path, result, today: date, fs_now_ns: int, reports: set[str], files: list[str],
                    new_day: bool = False, reverify=None, verdict_cache=None) -> Written:
    """In a copy of the last database at path: delete the rows of `reports` and of the record `files`, insert
    the rows of the validated records (the changed files and the reports whose formulas use them); on a new day,
    count every check's age again (the reports whose citability changed with it are among `reports`); then check it
    holds the records' claims."""
    digests = checksum.of_records(result.loaded.records)
    rows = {name: list(make()) for name, make in
            table_rows(result, today, fs_now_ns, reverify, verdict_cache, digests=digests).items()}
    doomed = json.dumps(sorted(reports))
    fts = schema.table("claims").fts
    conn = sqlite3.connect(str(path), isolation_level=None)  # transactions are begun and committed here
    try:
        conn.execute("pragma journal_mode = off")  # a temporary copy: an error discards the whole file
        conn.execute("pragma synchronous = off")
        conn.execute("pragma foreign_keys = on")
        conn.execute("begin")
        # Rows of kept reports may point at rows deleted and written again (a formula's input): references are
        # checked when the transaction commits, not at each delete.
        conn.execute("pragma defer_foreign_keys = on")
        conn.execute("create temp table doomed_nodes as select 'claim:' || ref as id from claims where report "
                     "in (select value from json_each(?)) union all select 'source:' || ref from sources "
                     "where report in (select value from json_each(?)) union all select 'report:' || value "
                     "from json_each(?)", (doomed, doomed, doomed))
        conn.execute("delete from graph_edges where source in (select id from doomed_nodes)")
        conn.execute("delete from graph_nodes where id in (select id from doomed_nodes)")
        # the full-text index holds a copy of the text: its rows go before the claims they index
        cols = ", ".join(fts)
        conn.execute(f"insert into claims_fts (claims_fts, rowid, {cols}) select 'delete', rowid, {cols} "
                     f"from claims where report in (select value from json_each(?))", (doomed,))
        conn.execute("delete from _files where path in (select value from json_each(?))", (json.dumps(files),))
        for name in _REPORT_ROWS:
            conn.execute(f'delete from "{name}" where report in (select value from json_each(?))', (doomed,))
        conn.execute("delete from reports where id in (select value from json_each(?))", (doomed,))

        known = {r for (r,) in conn.execute("select id from graph_nodes where kind in ('pattern', 'omission')")}
        rows["graph_nodes"] = [n for n in rows["graph_nodes"] if n["id"] not in known]
        # The graph of the written records leaves out the edges to formulas' inputs in reports kept as they are.
        drawn = {(e["source"], e["target"]) for e in rows["graph_edges"]}
        written_claims = {n["id"] for n in rows["graph_nodes"]}
        rows["graph_edges"] += [
            {"source": f"claim:{d.report}/{d.claim}", "target": f"claim:{ref}", "relation": "derived_from",
             "evidence": None}
            for d in result.checked.derived.values() if f"claim:{d.report}/{d.claim}" in written_claims
            for ref in dict.fromkeys(d.inputs) if (f"claim:{d.report}/{d.claim}", f"claim:{ref}") not in drawn]
        for name in ["reports", *reversed(_REPORT_ROWS), "graph_nodes", "graph_edges"]:
            _insert(conn, name, rows[name])
        if new_day:
            conn.execute("update claims set age_days = cast(julianday(?) - julianday(verified) as integer) "
                         "where verified is not null", (today.isoformat(),))
            conn.execute("update sources set age_days = cast(julianday(?) - julianday(checked) as integer)",
                         (today.isoformat(),))
        written = json.dumps(sorted(rec.report.id for rec in result.loaded.records))
        conn.execute(f"insert into claims_fts (rowid, {cols}) select rowid, {cols} from claims "
                     f"where report in (select value from json_each(?))", (written,))
        conn.execute("commit")
        counts = {t.name: conn.execute(f'select count(*) from "{t.name}"').fetchone()[0] for t in schema.TABLES}
    except sqlite3.IntegrityError as e:
        raise IntegrityError(f"the update breaks the database's references ({e})")
    finally:
        conn.close()
    return Written(counts, holds_claims(path, digests))


def write_meta(db_path: Path, meta: dict[str, str]) -> None:
    conn = sqlite3.connect(str(db_path))
    try:
        with conn:
            conn.execute(f"create table if not exists {schema.META} ([key] TEXT PRIMARY KEY, [value] TEXT)")
            conn.executemany(f"insert or replace into {schema.META} ([key], [value]) values (?, ?)", meta.items())
    finally:
        conn.close()
