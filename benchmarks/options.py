"""The YAML parser is the wall of a cold build: the options, measured on the same corpus in one child process.

`python -m benchmarks.options CLAIMS_DIR` prints one JSON object: seconds per option, for parsing every record
file of the folder (or, for the cache options, getting the same result back without parsing).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from pathlib import Path


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _parse_one(path: str):
    from kb.yaml12 import parse_yaml, read_text

    return parse_yaml(read_text(Path(path)))


def measure(folder: Path, workers: int = 2) -> dict:
    import yaml

    from kb.load import load_paths, record_files
    from kb.yaml12 import parse_yaml

    files = record_files(folder)
    texts = [f.read_text(encoding="utf-8") for f in files]
    out: dict = {"files": len(files), "megabytes": round(sum(len(t.encode()) for t in texts) / 1e6, 1)}

    parsed = []
    out["kb loader (libyaml + positions)"] = _time(lambda: parsed.extend(parse_yaml(t) for t in texts))
    out["kb loader + pydantic (load_paths)"] = _time(lambda: load_paths([folder]))
    out["PyYAML CSafeLoader (YAML 1.1)"] = _time(
        lambda: [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts])
    try:
        import yaml_rs

        out["yaml-rs (Rust; typed, no positions)"] = _time(
            lambda: [yaml_rs.loads(t, parse_datetime=False) for t in texts])
    except ImportError:
        out["yaml-rs (Rust; typed, no positions)"] = None
    as_json = [json.dumps(d) for d, _ in parsed]
    out["JSON of the same data"] = _time(lambda: [json.loads(j) for j in as_json])

    from multiprocessing import get_context

    with get_context("fork").Pool(workers) as pool:
        pool.map(abs, range(workers))  # started before timing
        out[f"kb loader in {workers} processes"] = _time(
            lambda: pool.map(_parse_one, [str(f) for f in files], chunksize=16))

    # A content-hash cache: the loader's result stored per file, keyed by sha256 of the file's bytes.
    blobs = [pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL) for p in parsed]
    raw = [f.read_bytes() for f in files]
    out["cache hit: sha256 + unpickle data"] = _time(
        lambda: [(hashlib.sha256(b).digest(), pickle.loads(x)) for b, x in zip(raw, blobs)])
    loaded = load_paths([folder]).records
    blob = pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL)
    out["cache hit: unpickle pydantic records"] = _time(lambda: pickle.loads(blob))
    return out


def stages(folder: Path, work: Path) -> dict:
    """Where a cold build's time goes, stage by stage, the way kb.store.build runs them."""
    from datetime import date

    from kb import clock
    from kb.db import checksum, read, rows, write
    from kb.checks import check
    from kb.graph import elements
    from kb.load import load_paths, load_vocabulary, vocabulary_path
    from kb.pipeline import Validation

    out: dict = {}
    t = time.perf_counter()
    vocabulary = load_vocabulary(vocabulary_path(folder))
    loaded = load_paths([folder])
    out["load: YAML + pydantic (kb.load)"] = time.perf_counter() - t
    t = time.perf_counter()
    checked = check(loaded.records, vocabulary, today=clock.today())
    out["checks (kb.checks)"] = time.perf_counter() - t
    v = Validation(loaded, checked, vocabulary, loaded.problems + checked.problems, claims_dir=folder)
    t = time.perf_counter()
    list(rows.verdict_rows(v))
    out["auditor verdicts (kb_verdicts)"] = time.perf_counter() - t
    t = time.perf_counter()
    elements(v)
    out["pattern graph (kb.graph)"] = time.perf_counter() - t
    t = time.perf_counter()
    write.write_database(work / "stages.db", v, clock.today(), 0)
    whole = time.perf_counter() - t
    out["write SQLite: rows, indexes, FTS"] = (
        whole - out["auditor verdicts (kb_verdicts)"]
        - out["pattern graph (kb.graph)"])
    t = time.perf_counter()
    checksum.combine(checksum.of_records(v.loaded.records))
    read.database_checksum(work / "stages.db")
    out["checksum records vs database"] = time.perf_counter() - t
    return out


def main() -> None:
    if sys.argv[1] == "stages":
        print(json.dumps(stages(Path(sys.argv[2]), Path(sys.argv[3]))))
    else:
        print(json.dumps(measure(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
