"""`kb sources fetch` and `kb reverify` against a real HTTP server on loopback (tests/sourceserver.py), serving
pages and PDFs made here: an unchanged page, an arXiv paper with a new version, a reworded page, a 404, a redirect
to file://, a slow answer, 50 MB bodies, a page that is not UTF-8 and a PDF whose quote crosses a hyphenated line
break. Every outcome is asserted; then how drift shows where figures are used (kb build, kb cite, kb check)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REAL_CLAIMS, ROOT, TODAY
from kb.cli import cli
from kb.fetch import FetchError, Fetcher, Settings
from kb.load import record_files
from kb.reverify import Results
from sourceserver import Page, SourceServer, endless, pdf, slowly

MB = 1024 * 1024

RECORD = """\
# yaml-language-server: $schema=../schema/record-v1.schema.json
# A report whose sources are all on the test server (and one on arXiv, read through the server as a mirror).
id: served-run
title: A Report Served on Loopback
organization: Test Lab
published: 2024-01-15
sources:
  - id: page
    title: The report's page
    url: {base}/page
    kind: primary
    checked: 2026-11-01
  - id: paper
    title: The report on arXiv
    url: https://arxiv.org/abs/2401.00001
    kind: primary
    version: v1  # the version read
    retrieved: 2026-11-01
    checked: 2026-11-01
  - id: blog
    title: A blog post, since reworded
    url: {base}/blog
    kind: secondary
    checked: 2026-11-01
  - id: gone
    title: A page that was taken down
    url: {base}/gone
    kind: secondary
    checked: 2026-11-01
  - id: trap
    title: A page that redirects to a local file
    url: {base}/to-file
    kind: secondary
    checked: 2026-11-01
  - id: slow
    title: A page that answers too late
    url: {base}/slow
    kind: secondary
    checked: 2026-11-01
  - id: huge
    title: A 50 MB body, its length announced
    url: {base}/huge
    kind: secondary
    checked: 2026-11-01
  - id: endless
    title: A 50 MB body, its length not announced
    url: {base}/endless
    kind: secondary
    checked: 2026-11-01
  - id: legacy
    title: A page in Windows-1252
    url: {base}/legacy
    kind: secondary
    checked: 2026-11-01
  - id: scan
    title: The report as a PDF
    url: {base}/report.pdf
    kind: primary
    checked: 2026-11-01
claims:
  # Found on the unchanged page.
  - id: interruptions
    statement: 419 unexpected interruptions.
    value: 419
    unit: interruptions
    source: page
    quote: The remaining 419 were unexpected interruptions
    verified: 2026-11-01   # the day it was checked
    status: confirmed
  - id: snapshot-days
    statement: The statistics cover a 54-day snapshot.
    value: 54
    unit: days
    source: page
    quote: During a snapshot of pre-training we saw many interruptions
    verified: 2026-11-01
    status: confirmed
  - id: gpus
    statement: Trained on 2048 GPUs.
    value: 2048
    unit: GPUs
    source: paper
    quote: trained on 2048 GPUs
    verified: 2026-11-01
    status: confirmed
  - id: tokens
    statement: Trained on 3.1T tokens.
    value: 3.1T
    unit: tokens
    source: paper
    quote: on 3.1T tokens of text
    verified: 2026-11-01
    status: confirmed
  - id: mfu
    statement: MFU was 38 percent.
    value: 38
    unit: percent
    source: blog
    quote: we reached an MFU of 38%
    verified: 2026-11-01
    status: secondary
  - id: taken-down
    statement: 12 spare nodes.
    value: 12
    unit: nodes
    source: gone
    quote: a pool of 12 spare nodes
    verified: 2026-11-01
    status: secondary
  - id: trapped
    statement: 3 restarts.
    value: 3
    source: trap
    quote: 3 restarts
    verified: 2026-11-01
    status: secondary
  - id: late
    statement: 5 restarts.
    value: 5
    source: slow
    quote: 5 restarts
    verified: 2026-11-01
    status: secondary
  - id: heavy
    statement: 6 restarts.
    value: 6
    source: huge
    quote: 6 restarts
    verified: 2026-11-01
    status: secondary
  - id: heavier
    statement: 7 restarts.
    value: 7
    source: endless
    quote: 7 restarts
    verified: 2026-11-01
    status: secondary
  - id: cluster
    statement: The Café cluster ran 512 GPUs.
    value: 512
    unit: GPUs
    source: legacy
    quote: The “Café” cluster ran 512 GPUs – mostly idle.
    verified: 2026-11-01
    status: secondary
  - id: pdf-interruptions
    statement: 419 unexpected interruptions, in the PDF.
    value: 419
    unit: interruptions
    source: scan
    locator: p. 2
    quote: The remaining 419 were unexpected interruptions, classified in Table 5.
    verified: 2026-11-01
    status: confirmed
"""

EXPECTED = {
    "served-run/interruptions": "found",
    "served-run/snapshot-days": "found",
    "served-run/gpus": "source-changed",
    "served-run/tokens": "moved",
    "served-run/mfu": "missing",
    "served-run/taken-down": "unreachable",
    "served-run/trapped": "unreachable",
    "served-run/late": "unreachable",
    "served-run/heavy": "unreachable",
    "served-run/heavier": "unreachable",
    "served-run/cluster": "found",
    "served-run/pdf-interruptions": "found",
}

ABSTRACT = """<!DOCTYPE html><html><head><title>[2401.00001] A Report</title></head><body>
<h1>A Report Served on Loopback</h1><blockquote>Abstract: we trained a model.</blockquote>
<div class="submission-history"><h2>Submission history</h2>
<strong>[v1]</strong> Mon, 15 Jan 2024 10:00:00 UTC (100 KB)<br>
<strong>[v2]</strong> Tue, 1 Oct 2024 10:00:00 UTC (120 KB)</div></body></html>"""


@pytest.fixture(scope="module")
def server():
    s = SourceServer().start()
    s.pages.update({
        "/page": Page("<!DOCTYPE html><html><head><title>Report</title><style>p {color: red}</style></head><body>"
                      "<h1>A Report</h1><h2>3.3 Reliability</h2><p>During a snapshot of pre-training we saw many "
                      "interruptions. The remaining 419 were unexpected interruptions, which are classified in "
                      "Table 5.</p><script>var quote = 'not text';</script></body></html>",
                      headers={"Content-Type": "text/html; charset=utf-8"}, etag='"page-1"'),
        "/abs/2401.00001": Page(ABSTRACT, headers={"Content-Type": "text/html; charset=utf-8"}),
        "/pdf/2401.00001v1": Page(pdf([["A Report", "We trained on 2048 GPUs over 60 days,",
                                        "on 3.1T tokens of text."]]), headers={"Content-Type": "application/pdf"}),
        "/pdf/2401.00001v2": Page(pdf([["A Report (revised)", "We trained on 2048 GPUs over 60 days,",
                                        "on 3.2T tokens of text."]]), headers={"Content-Type": "application/pdf"}),
        "/blog": Page("<html><body><article><p>In the end we reached around 40% MFU on the cluster.</p></article>"
                      "</body></html>", headers={"Content-Type": "text/html"}),
        "/to-file": Page(b"", 302, {"Location": "file:///etc/passwd"}),
        "/slow": Page(slowly(15.0), headers={"Content-Type": "text/html"}),
        "/huge": Page(endless(50 * MB), headers={"Content-Type": "text/plain", "Content-Length": str(50 * MB)}),
        "/endless": Page(endless(50 * MB), headers={"Content-Type": "text/plain"}),
        "/legacy": Page("<html><body><p>The \u201cCaf\u00e9\u201d cluster ran 512 GPUs \u2013 mostly idle.</p>"
                        "</body></html>".encode("cp1252"), headers={"Content-Type": "text/html; charset=iso-8859-1"}),
        "/report.pdf": Page(pdf([["Introduction", "We describe one run."],
                                 ["Reliability", "During the run, the remaining 419 were unexpected inter-",
                                  "ruptions, classified in Table 5."]]), headers={"Content-Type": "application/pdf"}),
    })
    yield s
    s.stop()


def run(*args, env=None):
    """The kb command in-process; its exit code, stdout and stderr."""
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


def knowledge_base(folder: Path, text: str) -> Path:
    claims = folder / "claims"
    claims.mkdir(parents=True)
    (claims / "served-run.yaml").write_text(text, encoding="utf-8")
    return claims


def online(server, cache: Path) -> list[str]:
    """The options that fetch from the test server: loopback allowed, its arXiv mirror, a short timeout (long
    enough for a busy machine: the slow page takes far longer)."""
    return ["--cache", cache, "--allow-local", "--arxiv-mirror", server.base, "--timeout", "2", "--retries", "0"]


@pytest.fixture(scope="module")
def fetched(server, tmp_path_factory):
    """The knowledge base and its sources fetched once: (claims folder, cache folder, kb sources fetch's JSON)."""
    folder = tmp_path_factory.mktemp("served")
    claims = knowledge_base(folder, RECORD.format(base=server.base))
    cache = folder / "cache"
    r = run("sources", "fetch", "--claims", claims, *online(server, cache), "--format", "json")
    assert r.exit_code == 1, r.output  # some sources unreachable
    return claims, cache, {f["ref"].split("/")[1]: f for f in json.loads(r.stdout)["fetched"]}


def results_of(stdout: str) -> dict[str, dict]:
    return {r["ref"]: r for r in json.loads(stdout)["results"]}


# kb sources fetch.


def test_fetch_reads_each_source_and_says_what_happened(fetched):
    _, _, found = fetched
    assert {k: f["outcome"] for k, f in found.items()} == {
        "page": "new", "paper": "new", "blog": "new", "gone": "unreachable", "trap": "unreachable",
        "slow": "unreachable", "huge": "unreachable", "endless": "unreachable", "legacy": "new", "scan": "new"}
    assert found["paper"]["version"] == "v2"  # the latest version, resolved from the abstract page
    assert found["gone"]["status"] == 404 and found["gone"]["detail"] == "HTTP 404 Not Found"
    assert "redirects to a file: URL" in found["trap"]["detail"] and "only http(s) redirects" in found["trap"]["detail"]
    assert found["slow"]["detail"].startswith("timed out after 2 s")
    assert found["huge"]["detail"] == f"the body is {50 * MB:,} bytes, more than the limit of {32 * MB:,} (--max-bytes)"
    assert found["endless"]["detail"].startswith(f"the body is more than the limit of {32 * MB:,} bytes")


def test_fetch_keeps_the_normalised_text_with_its_date_validators_and_version(fetched):
    _, cache, found = fetched
    page = json.loads((cache / "sources" / "served-run" / "page" / "meta.json").read_text())
    assert page["last"]["day"] == TODAY.isoformat() and page["last"]["etag"] == '"page-1"'
    text = (cache / "sources" / "served-run" / "page" / f"{found['page']['sha256']}.txt").read_text()
    assert "The remaining 419 were unexpected interruptions" in text
    assert "var quote" not in text and "color: red" not in text  # scripts and styles are not text
    paper = json.loads((cache / "sources" / "served-run" / "paper" / "meta.json").read_text())
    assert paper["last"]["version"] == "v2"
    assert sorted(t["version"] for t in paper["texts"].values()) == ["v1", "v2"]  # the version read is kept too
    legacy = json.loads((cache / "sources" / "served-run" / "legacy" / "meta.json").read_text())
    legacy_text = (cache / "sources" / "served-run" / "legacy" / f"{legacy['last']['sha256']}.txt").read_text()
    assert legacy_text == 'The "Café" cluster ran 512 GPUs - mostly idle.'  # decoded, quotes and dashes normalised


def test_an_unchanged_page_is_not_downloaded_again(server, fetched, tmp_path):
    claims, cache, _ = fetched
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    before = len(server.seen("/page"))
    r = run("sources", "fetch", "--claims", claims, *online(server, copy), "--format", "json")
    again = {f["ref"].split("/")[1]: f for f in json.loads(r.stdout)["fetched"]}
    assert again["page"]["outcome"] == "unchanged" and again["page"]["status"] == 304
    assert server.seen("/page")[before]["If-None-Match"] == '"page-1"'
    assert again["paper"]["outcome"] == "unchanged"  # an arXiv version held is never downloaded again
    assert len(server.seen("/pdf/2401.00001v2")) == 1


def test_the_server_sees_an_honest_user_agent(server, fetched):
    agent = server.seen("/page")[0]["User-Agent"]
    assert agent.startswith("report-claims/") and "kb sources fetch" in agent


def test_private_and_loopback_addresses_are_refused_unless_allowed(server):
    with Fetcher(Settings()) as f, pytest.raises(FetchError) as e:
        f.get(f"{server.base}/page")
    assert e.value.kind == "refused" and "127.0.0.1 is a private or loopback address" in e.value.message
    with Fetcher(Settings(allow_local=True)) as f:
        assert f.get(f"{server.base}/page").status == 200


def test_only_http_urls_are_fetched():
    with Fetcher(Settings(allow_local=True)) as f, pytest.raises(FetchError, match="only http and https"):
        f.get("file:///etc/passwd")


def test_a_busy_server_is_tried_again_with_backoff(server):
    server.pages["/flaky"] = [Page("busy", 503), Page("<p>fine</p>")]
    waits = []
    with Fetcher(Settings(allow_local=True, retries=2, backoff=0.25), sleep=waits.append) as f:
        assert f.get(f"{server.base}/flaky").status == 200
    assert waits == [0.25] and len(server.seen("/flaky")) == 2
    server.pages["/always-busy"] = Page("busy", 503)
    with Fetcher(Settings(allow_local=True, retries=2, backoff=0.25), sleep=waits.append) as f, \
            pytest.raises(FetchError) as e:
        f.get(f"{server.base}/always-busy")
    assert e.value.status == 503 and waits == [0.25, 0.25, 0.5] and len(server.seen("/always-busy")) == 3


def test_a_redirect_to_http_is_followed(server):
    server.pages["/old-address"] = Page(b"", 301, {"Location": "/page"})
    with Fetcher(Settings(allow_local=True)) as f:
        r = f.get(f"{server.base}/old-address")
    assert r.status == 200 and r.url == f"{server.base}/page"


# kb reverify: every outcome.


def test_reverify_offline_gives_every_outcome_from_the_cache(fetched):
    claims, cache, _ = fetched
    r = run("reverify", "--claims", claims, "--cache", cache, "--offline", "--format", "json")
    assert r.exit_code == 1  # drift
    got = results_of(r.stdout)
    assert {ref: g["result"] for ref, g in got.items()} == EXPECTED
    assert got["served-run/interruptions"]["where"] == "§ 3.3 Reliability"
    assert got["served-run/pdf-interruptions"]["where"] == "p. 2"  # across "inter-" / "ruptions"
    gpus = got["served-run/gpus"]
    assert gpus["version"] == "v2" and "the record read v1, the source is now v2" in gpus["detail"]
    tokens = got["served-run/tokens"]
    assert tokens["version"] == "v1" and tokens["detail"].startswith("not in paper (v2, fetched 2026-12-01); found in v1")
    assert got["served-run/mfu"]["detail"] == "not in blog (fetched 2026-12-01)"
    assert got["served-run/taken-down"]["status"] == 404
    assert "file: URL" in got["served-run/trapped"]["detail"]
    assert "timed out" in got["served-run/late"]["detail"]
    assert "limit" in got["served-run/heavy"]["detail"] and "limit" in got["served-run/heavier"]["detail"]
    assert json.loads(r.stdout)["counts"] == {"found": 4, "moved": 1, "missing": 1, "source-changed": 1,
                                              "unreachable": 5}


def test_reverify_online_fetches_and_gives_the_same_outcomes(server, tmp_path):
    claims = knowledge_base(tmp_path, RECORD.format(base=server.base))
    r = run("reverify", "--claims", claims, *online(server, tmp_path / "cache"), "--format", "json")
    assert r.exit_code == 1
    assert {ref: g["result"] for ref, g in results_of(r.stdout).items()} == EXPECTED
    assert {f["outcome"] for f in json.loads(r.stdout)["fetched"]} == {"new", "unreachable"}


def test_without_allow_local_the_test_server_is_unreachable(server, tmp_path):
    claims = knowledge_base(tmp_path, RECORD.format(base=server.base))
    r = run("reverify", "--claims", claims, "--cache", tmp_path / "cache", "--arxiv-mirror", server.base,
            "--retries", "0", "--format", "json")
    assert r.exit_code == 2  # nothing could be checked
    details = {g["detail"] for g in results_of(r.stdout).values()}
    assert all("is a private or loopback address" in d and "--allow-local" in d for d in details)


def one_source(base: str, path: str = "/page") -> str:
    """A record with one source on the test server and one claim quoting it."""
    return f"""\
id: served-run
title: A Report Served on Loopback
organization: Test Lab
published: 2024-01-15
sources:
  - id: page
    title: The report's page
    url: {base}{path}
    kind: primary
    checked: 2026-11-01
claims:
  - id: interruptions
    statement: 419 unexpected interruptions.
    value: 419
    unit: interruptions
    source: page
    quote: The remaining 419 were unexpected interruptions
    verified: 2026-11-01
    status: confirmed
"""


def test_exit_0_when_every_quote_is_found_and_2_when_nothing_could_be_checked(server, tmp_path):
    claims = knowledge_base(tmp_path / "a", one_source(server.base))
    r = run("reverify", "--claims", claims, *online(server, tmp_path / "a" / "cache"))
    assert r.exit_code == 0, r.output
    assert r.stdout == (f"{claims / 'served-run.yaml'}:17: found: served-run/interruptions: found in page (fetched "
                        f"2026-12-01), § 3.3 Reliability\n")
    claims = knowledge_base(tmp_path / "b", one_source(server.base, "/gone"))
    r = run("reverify", "--claims", claims, *online(server, tmp_path / "b" / "cache"))
    assert r.exit_code == 2
    assert "unreachable: served-run/interruptions: page could not be read on 2026-12-01: HTTP 404" in r.stdout


def test_offline_with_nothing_in_the_cache_checks_nothing(fetched, tmp_path):
    claims, _, _ = fetched
    r = run("reverify", "--claims", claims, "--cache", tmp_path / "empty", "--offline")
    assert r.exit_code == 2
    assert "no copy of page in the cache" in r.stdout and "kb sources add served-run/page FILE" in r.stdout


def test_annotations_and_markdown_for_ci(fetched, tmp_path):
    claims, cache, _ = fetched
    r = run("reverify", "--claims", claims, "--cache", cache, "--offline", "--format", "github")
    lines = r.stdout.splitlines()
    assert len(lines) == 8  # every result but found
    assert any(l.startswith("::warning file=") and "title=reverify%3A missing::served-run/mfu: not in blog" in l
               for l in lines)
    md = run("reverify", "--claims", claims, "--cache", cache, "--offline", "--format", "markdown").stdout
    assert md.startswith("## Quotes re-verified against their sources on 2026-12-01")
    assert "12 quoted claims: 4 found, 1 moved, 1 missing, 1 source-changed, 5 unreachable." in md
    rows = [l for l in md.splitlines() if l.startswith("| `")]
    assert [r.split("`")[1] for r in rows][:2] == ["served-run/mfu", "served-run/tokens"]  # worst first


def test_reverify_never_edits_records_without_stamp(fetched):
    claims, cache, _ = fetched
    before = (claims / "served-run.yaml").read_bytes()
    run("reverify", "--claims", claims, "--cache", cache, "--offline")
    assert (claims / "served-run.yaml").read_bytes() == before


def test_stamp_sets_verified_on_claims_found_whose_figure_reads_the_same(fetched, tmp_path):
    claims, cache, _ = fetched
    mine = tmp_path / "claims"
    shutil.copytree(claims, mine)
    path = mine / "served-run.yaml"
    before = path.read_text()
    r = run("reverify", "--claims", mine, "--cache", cache, "--offline", "--stamp", "--today", "2026-12-01",
            "--format", "json")
    assert sorted(json.loads(r.stdout)["stamped"]) == ["served-run/cluster", "served-run/interruptions",
                                                        "served-run/pdf-interruptions"]
    after = path.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    # Only the dates changed, comments and layout kept. Not stamped: snapshot-days (its quote was found but does
    # not give its figure, 54), and every claim whose quote was not found.
    assert changed == [("    verified: 2026-11-01   # the day it was checked",
                        "    verified: 2026-12-01   # the day it was checked"),
                       ("    verified: 2026-11-01", "    verified: 2026-12-01"),
                       ("    verified: 2026-11-01", "    verified: 2026-12-01")]
    assert len(before) == len(after) and before.count("\n") == after.count("\n")
    assert run("validate", "--claims", mine).exit_code == 0


# Drift where figures are used.


DOC = """# A plan

We expect [38% MFU](kb:served-run/mfu) and [419 interruptions](kb:served-run/interruptions).
"""


def test_a_drifted_figure_is_warned_about_by_check_and_cite_and_refused_with_strict(fetched, tmp_path):
    claims, cache, _ = fetched
    run("reverify", "--claims", claims, "--cache", cache, "--offline")
    doc = tmp_path / "plan.md"
    doc.write_text(DOC)
    r = run("check", "--claims", claims, "--cache", cache, doc)
    assert r.exit_code == 0
    assert f"{doc}:3:11: warning KB405: kb:served-run/mfu has drifted: its quote was not found when re-verified " \
           f"on 2026-12-01 (missing: not in blog (fetched 2026-12-01))" in r.stdout
    assert "served-run/interruptions" not in r.stdout  # found: nothing to say
    strict = run("check", "--claims", claims, "--cache", cache, "--strict", doc)
    assert strict.exit_code == 1 and f"{doc}:3:11: KB405: kb:served-run/mfu has drifted" in strict.stdout
    cited = run("cite", "--claims", claims, "--cache", cache, "served-run/mfu")
    assert cited.exit_code == 0 and cited.stdout.startswith("38% (")
    assert "warning: served-run/mfu has drifted: its quote was not found" in cited.stderr
    refused = run("cite", "--claims", claims, "--cache", cache, "--strict", "served-run/mfu")
    assert refused.exit_code == 1 and "served-run/mfu has drifted" in refused.stderr
    moved = run("cite", "--claims", claims, "--cache", cache, "--strict", "served-run/tokens")
    assert moved.exit_code == 1 and "found only in another version" in moved.stderr
    assert run("cite", "--claims", claims, "--cache", cache, "--strict", "served-run/interruptions").exit_code == 0


def test_kb_build_stores_the_last_results_and_marks_drifted_claims(fetched, tmp_path):
    claims, cache, _ = fetched
    run("reverify", "--claims", claims, "--cache", cache, "--offline")
    db = tmp_path / "kb.db"
    assert run("build", "--claims", claims, "--cache", cache, "--db", db).exit_code == 0
    conn = sqlite3.connect(db)
    try:
        stored = dict(conn.execute("select claim, result from reverify"))
        assert stored == EXPECTED
        row = conn.execute("select checked, version, found_in, http_status from reverify where claim = ?",
                           ("served-run/pdf-interruptions",)).fetchone()
        assert row == ("2026-12-01", None, "p. 2", None)
        assert conn.execute("select http_status from reverify where claim = 'served-run/taken-down'").fetchone() == (404,)
        drift = dict(conn.execute("select ref, drift from claims where drift is not null"))
        assert set(drift) == {"served-run/mfu", "served-run/tokens"}
    finally:
        conn.close()


def test_a_result_applies_only_to_the_quote_and_source_it_checked(fetched, tmp_path):
    claims, cache, _ = fetched
    run("reverify", "--claims", claims, "--cache", cache, "--offline")
    mine = tmp_path / "claims"
    shutil.copytree(claims, mine)
    path = mine / "served-run.yaml"
    path.write_text(path.read_text().replace("quote: we reached an MFU of 38%", "quote: we reached around 40% MFU"))
    r = run("check", "--claims", mine, "--cache", cache, "--strict", _doc(tmp_path))
    assert r.exit_code == 0, r.stdout  # the corrected quote has not been re-verified: no stale drift shown
    results = Results.load(cache / "reverify.json")
    assert results.by_ref["served-run/mfu"].result == "missing"


def _doc(tmp_path: Path) -> Path:
    doc = tmp_path / "plan.md"
    doc.write_text(DOC.replace("38% MFU", "38 percent MFU"))
    return doc


def test_new_results_rebuild_the_database_and_unchanged_ones_do_not(fetched, tmp_path):
    claims, cache, _ = fetched
    mine = tmp_path / "cache"
    shutil.copytree(cache, mine)
    db = tmp_path / "kb.db"
    run("build", "--claims", claims, "--cache", mine, "--db", db)
    again = run("build", "--claims", claims, "--cache", mine, "--db", db)
    assert "is up to date" in again.stderr
    run("reverify", "--claims", claims, "--cache", mine, "--offline", "served-run")
    data = json.loads((mine / "reverify.json").read_text())
    data["results"] = [r for r in data["results"] if r["ref"] != "served-run/mfu"]
    (mine / "reverify.json").write_text(json.dumps(data))
    rebuilt = run("build", "--claims", claims, "--cache", mine, "--db", db)
    assert rebuilt.stderr.startswith("wrote ")
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("select count(*) from reverify where claim = 'served-run/mfu'").fetchone() == (0,)
    finally:
        conn.close()


def test_a_broken_results_file_is_named_and_nothing_is_written(fetched, tmp_path):
    claims, _, _ = fetched
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "reverify.json").write_text("{not json")
    r = run("build", "--claims", claims, "--cache", cache, "--db", tmp_path / "kb.db")
    assert r.exit_code == 1 and f"{cache / 'reverify.json'}: not the results of kb reverify" in r.stderr
    assert not (tmp_path / "kb.db").exists()
    r = run("check", "--claims", claims, "--cache", cache, _doc(tmp_path))
    assert r.exit_code == 2 and "not the results of kb reverify" in r.stderr


def test_a_broken_cache_file_is_named(fetched, tmp_path):
    claims, cache, _ = fetched
    mine = tmp_path / "cache"
    shutil.copytree(cache, mine)
    meta = mine / "sources" / "served-run" / "page" / "meta.json"
    meta.write_text("[1, 2")
    r = run("sources", "fetch", "--claims", claims, "--cache", mine, "--allow-local", "--retries", "0", "served-run")
    assert r.exit_code == 2 and f"{meta}: cannot read" in r.stderr and "Traceback" not in r.output
    r = run("reverify", "--claims", claims, "--cache", mine, "--offline", "--format", "json")
    page = results_of(r.stdout)["served-run/interruptions"]
    assert page["result"] == "unreachable" and f"{meta}: cannot read" in page["detail"]


def test_unknown_reports_and_sources_are_named(fetched, tmp_path):
    claims, cache, _ = fetched
    r = run("reverify", "--claims", claims, "--cache", cache, "--offline", "served-rn")
    assert r.exit_code == 2 and "no report 'served-rn'; did you mean 'served-run'?" in r.stderr
    f = tmp_path / "copy.txt"
    f.write_text("text")
    r = run("sources", "add", "--claims", claims, "--cache", cache, "served-run/papr", f)
    assert r.exit_code == 1 and "the sources of served-run: page, paper" in r.stderr
    r = run("sources", "add", "--claims", claims, "--cache", cache, "served-run/paper", tmp_path / "missing.pdf")
    assert r.exit_code == 2 and "missing.pdf: cannot read" in r.stderr
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\nnot really")
    r = run("sources", "add", "--claims", claims, "--cache", cache, "served-run/paper", broken)
    assert r.exit_code == 2 and "broken.pdf: not a readable PDF" in r.stderr


# A copy you read, added by hand: kb reverify --offline on the real knowledge base.


def test_sources_add_puts_a_copy_in_the_cache_for_offline_checks(fetched, tmp_path):
    claims, _, _ = fetched
    cache = tmp_path / "cache"
    copy = tmp_path / "blog.html"
    copy.write_text("<p>At the time we reached an MFU of 38% on the cluster.</p>")
    r = run("sources", "add", "--claims", claims, "--cache", cache, "served-run/blog", copy)
    assert r.exit_code == 0 and "served-run/blog: added (sha256 " in r.stderr
    r = run("reverify", "--claims", claims, "--cache", cache, "--offline", "--format", "json", "served-run")
    assert results_of(r.stdout)["served-run/mfu"]["result"] == "found"
    listed = json.loads(run("sources", "list", "--claims", claims, "--cache", cache, "--format", "json").stdout)
    blog = next(s for s in listed["sources"] if s["ref"] == "served-run/blog")
    assert blog["outcome"] == "added" and len(blog["sha256"]) == 64


def test_reverify_offline_runs_on_the_real_knowledge_base(tmp_path):
    """Invariant, whatever claims/ holds: with an empty cache nothing can be checked (exit 2, no traceback); with
    a copy of each source that holds its claims' quotes, every quote is found (or its source said to have
    changed, when the record gives a sha256), tables and curly quotes included."""
    from kb.load import load_file

    cache = tmp_path / "cache"
    r = run("reverify", "--claims", REAL_CLAIMS, "--cache", cache, "--offline", "--format", "json")
    unreached = [x for x in json.loads(r.stdout)["results"] if x["result"] == "unreachable"]
    assert unreached and all("in the cache" in x["detail"] for x in unreached)
    assert r.exit_code in (1, 2)  # 1 when a source kept in the repository (path:) could be checked

    for f in record_files(REAL_CLAIMS):
        report = load_file(f).records[0].report
        for s in report.sources:
            quotes = [c.quote for c in report.claims if c.source == s.id and c.quote]
            if quotes and s.url:
                copy = tmp_path / f"{report.id}-{s.id}.txt"
                copy.write_text("\n\n".join(quotes), encoding="utf-8")
                assert run("sources", "add", "--claims", REAL_CLAIMS, "--cache", cache, f"{report.id}/{s.id}",
                           copy).exit_code == 0
    r = run("reverify", "--claims", REAL_CLAIMS, "--cache", cache, "--offline", "--format", "json")
    results = json.loads(r.stdout)["results"]
    assert results and r.exit_code in (0, 1)
    assert [(x["ref"], x["result"], x["detail"]) for x in results if x["result"] not in ("found", "source-changed")] == []


def test_a_fetch_and_a_build_leave_git_status_clean(server, tmp_path):
    repo = tmp_path / "repo"
    knowledge_base(repo, one_source(server.base))
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "records"], cwd=repo, check=True)
    r = run("sources", "fetch", "--claims", repo / "claims", "--allow-local", "--retries", "0")
    assert r.exit_code == 0, r.output
    assert (repo / ".cache" / "sources" / "served-run" / "page" / "meta.json").exists()
    assert run("reverify", "--claims", repo / "claims", "--offline").exit_code == 0
    assert run("build", "--claims", repo / "claims").exit_code == 0
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


# Text as quotes are looked for in it (kb.sourcetext), and where a source's text is read from (kb.versions).


def test_normalising_makes_the_same_words_compare_equal():
    from kb.sourcetext import normalise

    assert normalise("e\ufb00ective \ufb01ne-tuning") == "effective fine-tuning"  # ligatures
    assert normalise("\u201cit\u2019s\u201d \u2014 1\u20132\u00a0GPUs") == "\"it's\" - 1-2 GPUs"  # quotes, dashes, spaces
    assert normalise("inter-\n  ruptions and GPT-\n4 and soft\u00adhyphen") == "interruptions and GPT-4 and softhyphen"
    assert normalise("  many\n\n\tspaces  ") == "many spaces"
    assert normalise("\uff11\uff12\uff18 GPUs") == "128 GPUs"  # full-width digits


def test_a_quote_is_found_with_the_slack_text_extraction_needs():
    from kb.sourcetext import find, from_bytes

    pdf_row = from_bytes(b"Faulty GPU  GPU  148  30.1%\nGPU HBM3 Memory GPU 72 17.2%")
    assert find("Faulty GPU | GPU | 148 | 30.1%", pdf_row, table=True)  # a table row whose cells lost their rules
    assert not find("Faulty GPU | GPU | 148 | 30.1%", pdf_row)  # a text quote keeps its pipes
    broken = from_bytes(b"a state-of-the-\nart model, pre-\ntraining for 54 days")
    assert find("a state-of-the-art model, pre-training for 54 days", broken)  # compounds broken at line ends
    assert not find("a state-of-the-art model, pre-training for 55 days", broken)
    page = from_bytes('<html><head><meta charset="windows-1252"></head><body><p>\x93Quoted\x94 \x96 '
                      'text</p></body></html>'.encode("latin-1"))
    assert page.text == '"Quoted" - text'  # the page's own charset, without one from the server


def test_github_files_are_read_as_raw_text_and_arxiv_urls_name_their_version():
    from kb.versions import arxiv, fetch_url, github_commit

    assert fetch_url("https://github.com/marin-community/marin/blob/main/docs/reports/marin-8b-retro.md") == \
        "https://raw.githubusercontent.com/marin-community/marin/main/docs/reports/marin-8b-retro.md"
    assert fetch_url("https://huggingface.co/blog/smollm3") == "https://huggingface.co/blog/smollm3"
    assert github_commit("https://github.com/o/r/blob/359f0e65db0d5dacbce3e60c50951b904b3d5243/README.md") == \
        "359f0e65db0d5dacbce3e60c50951b904b3d5243"
    assert github_commit("https://github.com/o/r/blob/main/README.md") is None
    assert (arxiv("https://arxiv.org/abs/2407.21783v3").id, arxiv("https://arxiv.org/abs/2407.21783v3").version) == \
        ("2407.21783", "v3")
    assert arxiv("https://arxiv.org/pdf/2407.21783").version is None and arxiv("https://example.org/abs/1") is None


def test_an_update_stores_the_results_as_a_full_build_does(fetched, tmp_path):
    from test_update import dump

    claims, cache, _ = fetched
    run("reverify", "--claims", claims, "--cache", cache, "--offline")
    mine = tmp_path / "claims"
    shutil.copytree(claims, mine)
    updated, full = tmp_path / "updated.db", tmp_path / "full.db"
    assert run("build", "--claims", mine, "--cache", cache, "--db", updated).exit_code == 0
    path = mine / "served-run.yaml"
    path.write_text(path.read_text().replace("statement: MFU was 38 percent.", "statement: The MFU was 38%."))
    r = run("build", "--claims", mine, "--cache", cache, "--db", updated)
    assert r.stderr.startswith("updated ") and "1 report (served-run) rewritten" in r.stderr
    assert run("build", "--claims", mine, "--cache", cache, "--db", full, "--force").exit_code == 0
    assert dump(updated) == dump(full)
    conn = sqlite3.connect(updated)
    try:
        assert dict(conn.execute("select claim, result from reverify")) == EXPECTED
    finally:
        conn.close()
