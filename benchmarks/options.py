"""The YAML parser is the wall of a cold build: the options, measured on the same corpus in one child process.

`python -m benchmarks.options CLAIMS_DIR` prints one JSON object: seconds per option, for parsing every record
file of the folder (or, for the cache options, getting the same result back without parsing).

`python -m benchmarks.options parse CLAIMS_DIR` measures the ways to parse that keep every scalar's text (issue 18):
the libyaml path kb.yaml12 took alone, rapidyaml's tree walked from Python, rapidyaml's JSON read by json.loads,
and kb.fastyaml (rapidyaml's JSON where it reads a file exactly, libyaml for the others), each as a ratio against
`json.loads` of the same data in the same run (best of --repeat runs), with the share of files kb.fastyaml takes
and why it leaves the others.
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
    from kb.fastyaml import parse_record

    out["kb loader, fast path (rapidyaml where exact, else libyaml)"] = _time(lambda: [parse_record(t) for t in texts])
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
    from kb.verdict_cache import VerdictCache, vocabulary_digest

    out: dict = {}
    t = time.perf_counter()
    vocabulary = load_vocabulary(vocabulary_path(folder))
    loaded = load_paths([folder])
    out["load: YAML + pydantic (kb.load)"] = time.perf_counter() - t
    t = time.perf_counter()
    checked = check(loaded.records, vocabulary, today=clock.today())
    out["checks (kb.checks)"] = time.perf_counter() - t
    v = Validation(loaded, checked, vocabulary, loaded.problems + checked.problems, claims_dir=folder)
    # The verdicts go into a verdict cache the write then reads, so writing is timed without auditing again
    # (a build without a cache audits while it writes: kb.db.rows.Verdicts).
    cache = VerdictCache(work / "stages-cache", vocabulary_digest(vocabulary))
    t = time.perf_counter()
    list(rows.Verdicts.of(v, cache).rows(v))
    out["auditor verdicts (kb.db.rows.Verdicts, two cores where it can)"] = time.perf_counter() - t
    t = time.perf_counter()
    elements(v)
    out["pattern graph (kb.graph)"] = time.perf_counter() - t
    t = time.perf_counter()
    write.write_database(work / "stages.db", v, clock.today(), 0, verdicts=rows.Verdicts.of(v, cache))
    whole = time.perf_counter() - t
    out["write SQLite: rows, indexes, FTS"] = whole - out["pattern graph (kb.graph)"]
    t = time.perf_counter()
    checksum.combine(checksum.of_records(v.loaded.records))
    read.database_checksum(work / "stages.db")
    out["checksum records vs database"] = time.perf_counter() - t
    return out


def _ryml_tree_walk(text: str):
    """rapidyaml's tree turned into data by walking it from Python (the same data as kb.yaml12 for a plain record;
    no checks: a measured alternative, not used by kb)."""
    import ryml
    from ryml import _ryml

    tree = ryml.Tree()
    _ryml.parse_csubstr(text, tree)
    kind, first, after, key, val = (_ryml.Tree_type, _ryml.Tree_first_child, _ryml.Tree_next_sibling,
                                    _ryml.Tree_key, _ryml.Tree_val)
    none, mapping, sequence, plain = ryml.NONE, ryml.MAP, ryml.SEQ, ryml.VAL_PLAIN

    def node(n):
        k = kind(tree, n)
        if k & mapping:
            out, c = {}, first(tree, n)
            while c != none:
                out[str(key(tree, c), "utf-8")] = node(c)
                c = after(tree, c)
            return out
        if k & sequence:
            out, c = [], first(tree, n)
            while c != none:
                out.append(node(c))
                c = after(tree, c)
            return out
        v = val(tree, n)
        s = "" if v is None else str(v, "utf-8")
        return None if k & plain and s in ("", "~", "null", "Null", "NULL") else s

    return node(_ryml.Tree_root_id(tree))


def _ryml_json(text: str):
    """rapidyaml's JSON read by json.loads with numbers kept as text, with none of kb.fastyaml's checks."""
    import ryml
    from ryml import _ryml

    tree = ryml.Tree()
    _ryml.parse_csubstr(text, tree)
    return json.loads(_ryml.emit_json_malloc(tree, _ryml.Tree_root_id(tree)), parse_int=str, parse_float=str)


def parse_paths(folder: Path, repeat: int = 3) -> dict:
    """Seconds (best of `repeat`) for each way to parse every record file of the folder, the share of files the
    fast path takes and why it leaves the others. The ways that keep every scalar's text are checked to give the
    same data as kb.yaml12 on the files they take."""
    from collections import Counter

    from kb import fastyaml
    from kb.load import record_files
    from kb.yaml12 import parse_yaml, read_text

    files = record_files(folder)
    texts = [read_text(f) for f in files]
    exact = [parse_yaml(t, lazy=True)[0] for t in texts]
    as_json = [json.dumps(d) for d in exact]
    why = Counter(fastyaml.declined(t) for t in texts)
    taken = why.pop(None, 0)
    assert [fastyaml.parse_record(t)[0] for t in texts] == exact
    assert all(_ryml_tree_walk(t) == d for t, d in zip(texts, exact) if fastyaml.declined(t) is None)

    def best(fn) -> float:
        return min(_time(fn) for _ in range(repeat))

    out: dict = {"files": len(files), "megabytes": round(sum(len(t.encode()) for t in texts) / 1e6, 1),
                 "fast path share": taken / max(1, len(files)), "left to libyaml": dict(why.most_common())}
    out["json.loads of the same data"] = best(lambda: [json.loads(j) for j in as_json])
    out["kb.yaml12 alone (libyaml nodes; the path before)"] = best(lambda: [parse_yaml(t, lazy=True) for t in texts])
    out["rapidyaml tree walked from Python"] = best(lambda: [_ryml_tree_walk(t) for t in texts])
    out["rapidyaml JSON + json.loads, no checks"] = best(lambda: [_ryml_json(t) for t in texts])
    out["kb.fastyaml (rapidyaml JSON, checks, libyaml for the rest)"] = best(
        lambda: [fastyaml.parse_record(t) for t in texts])
    try:  # the other fast parser on PyPI; not exact (YAML 1.2 types: 3.10 → 3.1, 012 → 12), for comparison
        import yaml_rs

        out["yaml-rs (typed: not exact)"] = best(lambda: [yaml_rs.loads(t, parse_datetime=False) for t in texts])
    except ImportError:
        pass
    return out


def _print_parse_paths(out: dict) -> None:
    base = out["json.loads of the same data"]
    print(f"{out['files']:,} files, {out['megabytes']} MB; kb.fastyaml takes {out['fast path share']:.1%} of them")
    for reason, n in out["left to libyaml"].items():
        print(f"  left to libyaml ({n}): {reason}")
    print("ratio against json.loads of the same data (seconds for reading only):")
    for name, secs in out.items():
        if name not in ("files", "megabytes", "fast path share", "left to libyaml"):
            print(f"  {secs / base:6.2f}x  {name}  ({secs:.3f} s)")
    print(json.dumps(out))


def main() -> None:
    if sys.argv[1] == "stages":
        print(json.dumps(stages(Path(sys.argv[2]), Path(sys.argv[3]))))
    elif sys.argv[1] == "parse":
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
        _print_parse_paths(parse_paths(Path(sys.argv[2]), repeat))
    else:
        print(json.dumps(measure(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
