"""Atomic builds under kill: `kb build --force` is killed with SIGKILL at random points, over and over, and the last
good database must stay byte-identical, open, and pass SQLite's integrity check; the temporary files killed builds
leave behind never break the next build, which removes them. Readers querying the database while builds replace
it see no errors."""

from __future__ import annotations

import hashlib
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, TODAY

sys.path.insert(0, str(ROOT))
from benchmarks.generate import generate  # noqa: E402

BIN = Path(sys.executable).parent
KILLS = 20


def _kb() -> str:
    p = BIN / "kb"
    return str(p) if p.exists() else "kb"


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _intact(db: Path, claims: int) -> None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert conn.execute("select count(*) from claims").fetchone()[0] == claims
        conn.execute("select count(*) from claims_fts where claims_fts match 'interruptions'").fetchone()
    finally:
        conn.close()


def _temporaries(db: Path, settle: float = 0) -> list[Path]:
    """Temporaries beside the database; with settle, after waiting up to that long for the replaced database
    (kept aside under a temporary name) to be removed by the build's background child."""
    deadline = time.monotonic() + settle
    while True:
        found = sorted(db.parent.glob(f".{db.name}.*.tmp"))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A knowledge base whose build takes a second or two here (12 reports × 100 claims)."""
    folder = tmp_path_factory.mktemp("atomic")
    c = generate(folder / "claims", reports=12, claims=100, today=TODAY)
    return folder, c


def _build(claims: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen([_kb(), "build", "--claims", str(claims), "--db", str(db), "--force"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_a_killed_build_leaves_the_last_good_database(corpus):
    """Each kill leaves the database as it was, byte for byte; or, when the kill lands after the rename, the
    complete new database (its stored checksum matches its claims)."""
    from kb.db.read import database_checksum, meta as read_meta

    folder, c = corpus
    claims, db = c.folder, folder / "site" / "kb.db"
    t = time.perf_counter()
    first = _build(claims, db)
    _, err = first.communicate(timeout=120)
    took = time.perf_counter() - t
    assert first.returncode == 0, err.decode()
    _intact(db, c.claims)
    good = _digest(db)

    rng = random.Random(8)
    kills = finished = 0
    after_rename: list[int] = []
    while kills < KILLS:
        p = _build(claims, db)
        time.sleep(rng.uniform(0.05, took * 0.95))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
            kills += 1
            now = _digest(db)
            if now != good:  # killed after the rename (writing inspect-data.json, exiting): a whole new build
                meta = read_meta(db)
                assert meta.get("checksum") == database_checksum(db), f"kill {kills}: a partial database"
                after_rename.append(kills)
                good = now
        else:  # it finished first: the new database is now the last good one
            p.communicate()
            assert p.returncode == 0
            finished += 1
            good = _digest(db)
        _intact(db, c.claims)
        assert finished < 10, "the builds finish before they can be killed; use a bigger corpus"
    assert kills == KILLS
    assert len(after_rename) < KILLS // 2  # most kills land before the rename, where the old file must survive

    # Killed builds leave temporaries; the next build works regardless and removes them.
    done = subprocess.run([_kb(), "build", "--claims", str(claims), "--db", str(db), "--force"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    _intact(db, c.claims)
    assert _temporaries(db, settle=5) == []


def test_stale_temporaries_of_a_killed_build_are_removed_by_the_next(corpus, tmp_path):
    from kb.store import build

    folder, c = corpus
    db = tmp_path / "site" / "kb.db"
    db.parent.mkdir()
    stale = db.parent / f".{db.name}.killed123.tmp"
    stale.write_bytes(b"half a database")
    other = db.parent / ".other.db.x.tmp"  # another database's temporary is not ours to remove
    other.write_bytes(b"x")
    build(c.folder, db, force=True)
    assert not stale.exists() and other.exists()
    _intact(db, c.claims)


def test_readers_see_no_errors_while_builds_replace_the_database(corpus, tmp_path):
    folder, c = corpus
    claims, db = c.folder, tmp_path / "site" / "kb.db"
    first = subprocess.run([_kb(), "build", "--claims", str(claims), "--db", str(db), "--force"],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    stop = threading.Event()
    errors: list[str] = []
    queries = [0, 0]

    def fresh_connections() -> None:  # a new connection per query, as a new Datasette worker would open
        while not stop.is_set():
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
                try:
                    n = conn.execute("select count(*) from claims").fetchone()[0]
                    conn.execute("select ref from claims_fts join claims on claims.rowid = claims_fts.rowid "
                                 "where claims_fts match 'interruptions' limit 5").fetchall()
                    conn.execute("select report, count(*) from claims group by report").fetchall()
                finally:
                    conn.close()
                if n != c.claims:
                    errors.append(f"{n} claims")
                queries[0] += 1
            except sqlite3.Error as e:
                errors.append(f"fresh: {type(e).__name__}: {e}")

    def held_connection() -> None:  # one connection kept open across replacements, as Datasette's immutable one
        conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        try:
            while not stop.is_set():
                try:
                    conn.execute("select count(*), sum(length(statement)) from claims").fetchone()
                    queries[1] += 1
                except sqlite3.Error as e:
                    errors.append(f"held: {type(e).__name__}: {e}")
        finally:
            conn.close()

    readers = [threading.Thread(target=fresh_connections), threading.Thread(target=held_connection)]
    for r in readers:
        r.start()
    try:
        for _ in range(3):
            b = subprocess.run([_kb(), "build", "--claims", str(claims), "--db", str(db), "--force"],
                               capture_output=True, text=True, timeout=120)
            assert b.returncode == 0, b.stderr
    finally:
        stop.set()
        for r in readers:
            r.join()
    assert errors == []
    assert queries[0] > 10 and queries[1] > 10
    _intact(db, c.claims)


def test_a_killed_update_leaves_the_last_good_database(corpus):
    """The same for updates (one file changed since the last build, no --force): the kill lands in the copy of
    the database, which is thrown away; the last good database stays as it was, or is the whole update."""
    import re

    from kb.db.read import database_checksum, meta as read_meta

    folder, c = corpus
    claims, db = c.folder, folder / "site" / "kb.db"
    target = sorted(claims.glob("[!_]*.yaml"))[3]

    def edit(i: int) -> None:
        text = target.read_text()
        target.write_text(re.sub(r"(\n    statement: )(Edit \d+ - )?", rf"\g<1>Edit {i} - ", text, count=1))

    def update() -> subprocess.Popen:
        return subprocess.Popen([_kb(), "build", "--claims", str(claims), "--db", str(db)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    assert subprocess.run([_kb(), "build", "--claims", str(claims), "--db", str(db)]).returncode == 0
    edit(0)
    t = time.perf_counter()
    first = update()
    _, err = first.communicate(timeout=120)
    took = time.perf_counter() - t
    assert first.returncode == 0 and b"updated" in err, err.decode()
    good = _digest(db)

    rng = random.Random(9)
    kills = 0
    for i in range(1, 40):
        if kills == KILLS // 2:
            break
        edit(i)
        p = update()
        time.sleep(rng.uniform(0.05, took * 0.95))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
            kills += 1
        else:
            p.communicate()
            assert p.returncode == 0
        now = _digest(db)
        if now != good:  # the update finished, or the kill came after the rename
            assert read_meta(db)["checksum"] == database_checksum(db), f"edit {i}: a partial database"
            good = now
        _intact(db, c.claims)
    assert kills == KILLS // 2

    done = subprocess.run([_kb(), "build", "--claims", str(claims), "--db", str(db)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    _intact(db, c.claims)
    assert _temporaries(db, settle=5) == []
    conn = sqlite3.connect(db)
    recorded = conn.execute("select sha256 from _files where path = ?", (target.name,)).fetchone()[0]
    conn.close()
    assert recorded == hashlib.sha256(target.read_bytes()).hexdigest()
