"""The measured operations, each run in a fresh child process by the runner so its peak memory is its own:
`python -m benchmarks.child TASK ARGS...` prints one JSON line {"seconds": ...} timing the operation alone
(interpreter start-up and imports excluded, the same for every tool)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def kb_build(claims: str, db: str, force: str = "force", cache: str = "") -> float:
    """`cache`: the cache folder (its verdicts kept between builds); a new empty one measures a cold build."""
    from kb.store import build

    stages: dict[str, float] = {}
    last = [time.perf_counter(), "start"]

    def on_stage(name: str) -> None:
        now = time.perf_counter()
        stages[last[1]] = stages.get(last[1], 0.0) + now - last[0]
        last[:] = [now, name]

    t = time.perf_counter()
    result = build(claims, db, force=force == "force", cache=cache or None, on_stage=on_stage)
    seconds = time.perf_counter() - t
    on_stage("end")
    how = "skipped" if result.skipped else f"updated {len(result.updated)}" if result.updated else "full"
    # what the build did and how long each stage took, for the runner's notes
    print(json.dumps({"build": how, "stages": stages}), file=sys.stderr)
    return seconds


def yaml_to_sqlite(flat_yaml: str, db: str) -> float:
    from yaml_to_sqlite.cli import cli

    Path(db).unlink(missing_ok=True)
    t = time.perf_counter()
    cli.main([db, "claims", flat_yaml, "--pk", "ref"], standalone_mode=False)
    return time.perf_counter() - t


def floor(flat_json: str, db: str) -> float:
    """The floor: the same claims as JSON, parsed, and written with sqlite3 executemany into one table."""
    import sqlite3

    Path(db).unlink(missing_ok=True)
    t = time.perf_counter()
    rows = json.loads(Path(flat_json).read_text(encoding="utf-8"))
    columns: dict[str, None] = {}
    for r in rows:
        for k in r:
            columns.setdefault(k, None)
    cols = list(columns)
    conn = sqlite3.connect(db)
    conn.execute(f"create table claims ({', '.join(repr(c) for c in cols)}, primary key (ref))")
    def cell(v):
        if isinstance(v, (list, dict)):
            return json.dumps(v)
        if isinstance(v, int) and abs(v) >= 2**63:
            return float(v)
        return v

    conn.executemany(f"insert into claims values ({', '.join('?' * len(cols))})",
                     ([cell(r.get(c)) for c in cols] for r in rows))
    conn.commit()
    conn.close()
    return time.perf_counter() - t


TASKS = {"kb-build": kb_build, "yaml-to-sqlite": yaml_to_sqlite, "floor": floor}


def main() -> None:
    task, *args = sys.argv[1:]
    seconds = TASKS[task](*args)
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main()
