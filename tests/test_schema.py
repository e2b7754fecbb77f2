"""The database's schema has one owner, kb.db.schema: every table written has the columns it declares, every row
maker gives exactly them, and site/metadata.yaml describes each column as the schema does."""

from __future__ import annotations

import sqlite3
import yaml

from conftest import ROOT, TODAY
from kb.db import schema
from kb.db.atomic import fs_clock
from kb.db.rows import table_rows
from kb.pipeline import validate_kb
from kb.store import build
from sitekb import make_site


def test_site_metadata_describes_every_column_as_the_schema_does():
    metadata = yaml.safe_load((ROOT / "site" / "metadata.yaml").read_text())
    assert schema.check_site_metadata(metadata) == [], "run: python -m kb.db.schema site/metadata.yaml"


def test_every_row_maker_gives_exactly_its_tables_columns(tmp_path):
    claims, _ = make_site(tmp_path)
    result = validate_kb(claims)
    makers = table_rows(result, TODAY, fs_clock(tmp_path / "x"))
    assert set(makers) == {t.name for t in schema.TABLES}
    for t in schema.TABLES:
        rows = list(makers[t.name]())
        assert rows, t.name  # the small knowledge base has rows in every table
        for row in rows:
            assert set(row) == set(t.column_names), t.name


def test_the_written_database_has_the_declared_tables_columns_and_types(tmp_path):
    claims, site = make_site(tmp_path)
    build(claims, site / "kb.db")
    conn = sqlite3.connect(site / "kb.db")
    try:
        for t in schema.TABLES:
            found = {name: kind for _, name, kind, *_ in conn.execute(f'pragma table_info("{t.name}")')}
            assert found == {c.name: {str: "TEXT", int: "INTEGER", float: "REAL"}[c.type] for c in t.columns}, t.name
        views = {name for (name,) in conn.execute("select name from sqlite_master where type = 'view'")}
        assert views == {"omission_matrix", *schema.VIEWS}
    finally:
        conn.close()


def test_no_module_outside_kb_db_writes_sql_against_the_tables():
    """The schema's owner is the kb.db package: anywhere else, a query of the tables' columns is a second owner."""
    tables = {t.name for t in schema.TABLES}
    offenders = []
    for path in [*(ROOT / "kb").glob("*.py"), *(ROOT / "auditor").glob("*.py")]:
        text = path.read_text()
        for table in tables:
            for verb in ("from", "into", "update", "join"):
                if f"{verb} {table} " in text.lower() or f'{verb} "{table}"' in text.lower():
                    offenders.append(f"{path.relative_to(ROOT)}: {verb} {table}")
    assert offenders == []
