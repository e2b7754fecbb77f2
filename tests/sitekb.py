"""A small knowledge base whose right answers are known, built into a copy of site/, for the site tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from conftest import GOOD, ROOT, VOCABULARY, replace

# A second report: pattern links, a contradicted claim, a range, disclosures of every omission.
SECOND = """\
id: second-run
title: A Second Report on Scaling
organization: Other Lab
published: 2025-01-15
sources:
  - id: paper
    title: A Second Report on Scaling
    url: https://example.org/second
    kind: primary
    checked: 2026-08-02
claims:
  - id: mfu
    statement: Model FLOPs utilization landed between 38 and 43 percent.
    value: [38, 43]
    unit: percent
    source: paper
    verified: 2026-08-02
    status: confirmed
    patterns: [failure-scaling, arch-is-infra]
  - id: aux-loss-removed
    statement: The auxiliary balance loss was removed entirely.
    source: paper
    quote: we also employ a complementary sequence-wise balance loss
    verified: 2026-08-02
    status: contradicted
    note: Not removed; a sequence-wise balance loss with alpha 0.0001 remains.
    patterns: [spike-layers]
  - id: job-gpus
    statement: The job ran on 2,048 GPUs.
    value: 2048
    unit: GPUs
    source: paper
    verified: 2026-08-02
    status: confirmed
    patterns: [failure-scaling]
  - id: failures-per-day
    statement: About two machines failed every day.
    value: 2
    bound: about
    unit: failures per day
    source: paper
    verified: 2026-08-02
    status: confirmed
    patterns: [failure-scaling]
  - id: old-check
    statement: The cluster had 2,048 GPUs.
    value: 2048
    unit: GPUs
    source: paper
    verified: 2025-02-01
    status: confirmed
disclosures:
  failed-runs: {status: absent, note: No failed-run count.}
  data-filtering: {status: partial, note: Category shares only.}
  hp-search: {status: partial, note: Final values only.}
  ops-staffing: {status: absent, note: Nothing on staffing.}
  contamination: {status: disclosed, note: 8-gram overlap with thresholds.}
"""

# Contributor text that must render inert everywhere.
HOSTILE = """\
id: hostile-run
title: <img src=x onerror=alert(2)> Hostile Report
organization: <b>Evil</b> Lab
published: 2025-03-01
sources:
  - id: paper
    title: <script>alert(3)</script>
    url: https://example.org/hostile
    kind: primary
    checked: 2026-08-02
claims:
  - id: scripted
    statement: <script>alert(1)</script> 7 interruptions in a week.
    value: 7
    unit: interruptions
    source: paper
    quote: See [x](javascript:alert(1)) for details
    verified: 2026-08-02
    status: confirmed
disclosures:
  failed-runs: {status: partial, note: "<script>alert(4)</script>"}
"""

CLAIMS = 3 + 5 + 1


def make_site(tmp: Path) -> tuple[Path, Path]:
    """A claims folder with the three records and a copy of site/ (without a built database)."""
    claims = tmp / "claims"
    claims.mkdir(parents=True)
    (claims / "example-run.yaml").write_text(GOOD)
    (claims / "second-run.yaml").write_text(SECOND)
    (claims / "hostile-run.yaml").write_text(HOSTILE)
    site = tmp / "site"
    shutil.copytree(ROOT / "site", site, ignore=shutil.ignore_patterns("*.db", "*.db-*", "inspect-data.json",
                                                                        "__pycache__", "*.tmp"))
    return claims, site


def add_drift(claims: Path) -> Path:
    """Copies of the three reports' sources put in the cache beside claims/ (as `kb sources add` does), one of them
    reworded since the record quoted it, and `kb reverify --offline` run: example-run/unexpected-interruptions has
    drifted (its quote is missing, and so has the figure derived from it); second-run/aux-loss-removed and
    hostile-run/scripted are found. Returns the cache folder."""
    from click.testing import CliRunner

    from kb.cli import cli

    copies = claims.parent / "copies"
    copies.mkdir(exist_ok=True)
    texts = {
        "example-run/paper": "During a 54-day snapshot, the remaining 420 were unexpected interruptions.",
        "second-run/paper": "For balance, we also employ a complementary sequence-wise balance loss.",
        "hostile-run/paper": "See [x](javascript:alert(1)) for details",
    }
    for ref, text in texts.items():
        path = copies / f"{ref.replace('/', '-')}.txt"
        path.write_text(text, encoding="utf-8")
        added = CliRunner().invoke(cli, ["sources", "add", "--claims", str(claims), ref, str(path)])
        assert added.exit_code == 0, added.output
    done = CliRunner().invoke(cli, ["reverify", "--claims", str(claims), "--offline"])
    assert done.exit_code == 1, done.output  # drift
    return claims.parent / ".cache"


def make_fixture_site(tmp: Path) -> tuple[Path, Path]:
    """The fixture knowledge base (tests/fixtures/kb: the article and its eight reports, frozen) and a copy of
    site/: real-shaped data for what the small one cannot show (the article, corrections, two chart series)."""
    from conftest import CLAIMS as FIXTURE_CLAIMS

    claims = tmp / "claims"
    shutil.copytree(FIXTURE_CLAIMS, claims)
    site = tmp / "site"
    shutil.copytree(ROOT / "site", site, ignore=shutil.ignore_patterns("*.db", "*.db-*", "inspect-data.json",
                                                                        "__pycache__", "*.tmp"))
    return claims, site


def load_plugin():
    """site/plugins/kb_site.py as a module, for the functions its pages use."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("kb_site", ROOT / "site/plugins/kb_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def kb_serve(claims: Path, site: Path):
    """`kb serve` started as users start it, on a free loopback port: yields its base URL once it answers."""
    port = free_port()
    kb = Path(sys.executable).parent / "kb"
    proc = subprocess.Popen([str(kb), "serve", "--claims", str(claims), "--site", str(site), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/-/versions.json", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read().decode() if proc.poll() is not None else ""
            os.killpg(proc.pid, signal.SIGTERM)
            pytest.fail(f"kb serve did not start: {out}")
        time.sleep(0.2)
    try:
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
