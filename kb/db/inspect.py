"""site/inspect-data.json: Datasette opens the databases it names immutable (read-only, no locking) and takes
table counts from it instead of counting on every page."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from . import read


def write_inspect_data(db_path: Path, counts: dict[str, int]) -> None:
    conn = read.connect(db_path)
    try:
        tables = read.table_names(conn)
        table_counts = {t: counts[t] if t in counts else read.count(conn, t) for t in tables if t != "claims_fts"}
        meta = read.meta_of(conn)
    finally:
        conn.close()
    table_counts["claims_fts"] = table_counts["claims"]  # an index of the claims (counting it reads them all)
    # "hash" names the content (Datasette only shows it): the inputs' fingerprint and the claims' checksum
    # stand for the file's sha256, which would read every byte of a large database on every build.
    content = hashlib.sha256(f"{meta['fingerprint']}\0{meta['checksum']}".encode()).hexdigest()
    data = {db_path.stem: {"hash": content, "size": db_path.stat().st_size,
                           "file": db_path.name, "tables": {t: {"count": n} for t, n in table_counts.items()}}}
    target = db_path.parent / "inspect-data.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, target)
