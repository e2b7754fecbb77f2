"""Datasette under load, on loopback only: a real `datasette serve` of a copy of site/ with a built database,
driven by a bounded number of concurrent clients for a bounded time; p50/p95 latency and errors per page,
each page compared with Datasette's lightest page (/-/versions.json) measured under the same load."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .measure import BIN, ROOT

BASELINE = "/-/versions.json"
PAGES = {
    "claims table with facets": "/kb/claims",
    "full-text search": "/kb/claims?_search=interruptions",
    "canned query (citable_figures)": "/kb/citable_figures",
    "omission heatmap (/omissions)": "/omissions",
}
MAX_REQUESTS = 200_000  # a hard bound on top of the time bound


@dataclass
class PageStats:
    url: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict = field(default_factory=dict)

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_site(db: Path, target: Path) -> Path:
    """A copy of site/ (metadata, settings, plugins, templates, static) with db as its kb.db."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / "site", target, ignore=shutil.ignore_patterns("kb.db", "*.tmp", "inspect-data.json",
                                                                         "__pycache__"))
    shutil.copy(db, target / "kb.db")
    write_inspect(target / "kb.db")
    return target


def write_inspect(db: Path) -> None:
    """inspect-data.json for the database (table counts; Datasette then opens it immutable)."""
    import hashlib

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
    counts = {t: conn.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables}
    conn.close()
    h = hashlib.sha256()
    with open(db, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    data = {db.stem: {"hash": h.hexdigest(), "size": db.stat().st_size, "file": db.name,
                      "tables": {t: {"count": n} for t, n in counts.items()}}}
    (db.parent / "inspect-data.json").write_text(json.dumps(data))


def multiply_claims(db: Path, factor: int) -> int:
    """Grow a built database's claims table factor times in SQL (copies with refs suffixed ~2, ~3, ...) and
    rebuild its full-text index: a database of factor × the claims without running kb build at that size."""
    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute("pragma table_info(claims)")]
    select = ", ".join("ref || '~' || :k" if c == "ref" else f'"{c}"' for c in cols)
    conn.execute("pragma foreign_keys = off")
    base = conn.execute("select max(rowid) from claims").fetchone()[0]
    for k in range(2, factor + 1):
        conn.execute(f'insert into claims ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
                     f"select {select} from claims where rowid <= :base", {"k": k, "base": base})
    conn.execute("insert into claims_fts(claims_fts) values ('rebuild')")
    conn.execute("analyze")
    conn.commit()
    n = conn.execute("select count(*) from claims").fetchone()[0]
    conn.execute("vacuum")
    conn.close()
    write_inspect(db)
    return n


class Server:
    def __init__(self, site: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(site.parent / f"datasette-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [str(BIN / "datasette"), "serve", str(site), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait(self, timeout: float = 120) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"datasette exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.base + BASELINE, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("datasette did not start in time")

    def peak_mb(self) -> Optional[float]:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


async def _drive(base: str, urls: list[str], clients: int, seconds: float) -> dict[str, PageStats]:
    import httpx

    stats = {u: PageStats(u) for u in urls}
    sent = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        for u in urls:  # warm up: first use of each page (query plans, templates)
            await client.get(u)

        async def worker(k: int) -> None:
            nonlocal sent
            i = k
            while time.perf_counter() < deadline and sent < MAX_REQUESTS:
                u = urls[i % len(urls)]
                i += 1
                sent += 1
                s = stats[u]
                t = time.perf_counter()
                try:
                    r = await client.get(u)
                    s.statuses[r.status_code] = s.statuses.get(r.status_code, 0) + 1
                    if r.status_code != 200:
                        s.errors += 1
                except httpx.HTTPError as e:
                    s.errors += 1
                    s.statuses[type(e).__name__] = s.statuses.get(type(e).__name__, 0) + 1
                s.latencies.append(time.perf_counter() - t)

        await asyncio.gather(*(worker(k) for k in range(clients)))
    return stats


def load_test(site: Path, clients: int, seconds: float) -> dict:
    """Serve site/, drive every page and the baseline together; per page: p50, p95, errors, requests."""
    server = Server(site)
    try:
        server.wait()
        urls = [BASELINE, *PAGES.values()]
        stats = asyncio.run(_drive(server.base, urls, clients, seconds))
        peak = server.peak_mb()
    finally:
        server.stop()
    out = {"clients": clients, "seconds": seconds, "server_peak_mb": peak, "pages": {}}
    for name, url in [("/-/versions.json", BASELINE), *PAGES.items()]:
        s = stats[url]
        out["pages"][name] = {"url": url, "requests": len(s.latencies), "errors": s.errors,
                              "p50_ms": s.pct(0.5) * 1000, "p95_ms": s.pct(0.95) * 1000,
                              "statuses": {str(k): v for k, v in s.statuses.items()}}
    return out


if __name__ == "__main__":  # python -m benchmarks.datasette_load SITE CLIENTS SECONDS
    print(json.dumps(load_test(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])), indent=2))
