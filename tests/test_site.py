"""The site: Datasette on site/, in-process through Datasette's own client, then as a real server on loopback."""

from __future__ import annotations

import asyncio
import csv
import shutil
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kb.store import build
from conftest import TODAY
from sitekb import CLAIMS, free_port, kb_serve, make_site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    claims, site = make_site(tmp_path_factory.mktemp("kb"))
    build(claims, site / "kb.db", today=TODAY)
    return claims, site


@pytest.fixture(scope="module")
def get(site):
    """get(path) → the response of an in-process Datasette serving the site directory."""
    from datasette.app import Datasette

    ds = Datasette([], config_dir=site[1])
    loop = asyncio.new_event_loop()
    loop.run_until_complete(ds.invoke_startup())

    def _get(path: str):
        return loop.run_until_complete(ds.client.get(path))

    yield _get
    loop.close()


def rows(get, path: str) -> list[dict]:
    page, _, query = path.partition("?")
    if not page.endswith(".json"):
        page += ".json"
    r = get(f"{page}?{query}&_shape=objects&_size=max")
    assert r.status_code == 200, (path, r.text[:500])
    return r.json()["rows"]


def test_the_database_is_served_immutable(get):
    dbs = get("/-/databases.json").json()
    (kb,) = [d for d in dbs if d["name"] == "kb"]
    assert kb["is_mutable"] is False


@pytest.mark.parametrize(
    "table, count",
    [("reports", 3), ("sources", 3), ("claims", CLAIMS), ("patterns", 5), ("omissions", 5), ("claim_patterns", 6),
     ("claim_topics", 1), ("disclosures", 7), ("derived_checks", 1), ("omission_matrix", 3), ("charts", 1), ("chart_points", 1),
     ("pattern_support", 5)],
)
def test_every_table_and_view_answers_with_its_rows(get, table, count):
    r = get(f"/kb/{table}.json?_shape=objects&_size=max")
    assert r.status_code == 200
    assert len(r.json()["rows"]) == count
    assert get(f"/kb/{table}").status_code == 200


@pytest.mark.parametrize(
    "query, expected",
    [
        ("claims_for_pattern?pattern=spike-layers", ["second-run/aux-loss-removed"]),
        ("claims_for_pattern?pattern=failure-scaling", ["example-run/unexpected-interruptions",
                                                        "second-run/failures-per-day", "second-run/job-gpus",
                                                        "second-run/mfu"]),
        ("reports_omitting?omission=failed-runs", ["second-run", "hostile-run"]),
        ("reports_omitting?omission=contamination", []),
        ("disputed_claims", ["second-run/aux-loss-removed"]),
        ("derived_figures", ["example-run/hours-between-interruptions"]),
        ("stale_checks?days=365", ["second-run/old-check"]),
    ],
)
def test_canned_queries_answer_with_the_expected_rows(get, query, expected):
    got = rows(get, f"/kb/{query}")
    key = "report" if query.startswith("reports_") else "claim" if query.startswith("derived") else "ref"
    assert [r[key] for r in got] == expected


def test_citable_figures_come_with_their_citation(get):
    got = {r["ref"]: r for r in rows(get, "/kb/citable_figures")}
    assert "second-run/aux-loss-removed" not in got and "second-run/old-check" not in got
    assert got["example-run/unexpected-interruptions"]["citation"].startswith(
        "419 interruptions — An Example Training Report (Example Lab, 2024), Sec. 3.3.4")


def test_every_canned_query_has_a_title_and_description(get):
    queries = get("/kb.json").json()["queries"]
    assert {q["name"] for q in queries} == {"claims_for_pattern", "reports_omitting", "citable_figures",
                                            "disputed_claims", "derived_figures", "stale_checks",
                                            "claim_impact", "drifted_sources"}
    meta = get("/-/metadata.json").json()["databases"]["kb"]["queries"]
    assert all(meta[q]["title"] and meta[q]["description"] for q in meta)


def test_every_table_and_column_is_described(get, site):
    import sqlite_utils

    tables = get("/-/metadata.json").json()["databases"]["kb"]["tables"]
    db = sqlite_utils.Database(site[1] / "kb.db")
    for name in ["reports", "sources", "claims", "patterns", "omissions", "claim_patterns", "claim_topics",
                 "disclosures", "derived_checks", "verdicts", "_files"]:
        assert tables[name].get("description") or tables[name].get("description_html"), name
        assert set(tables[name]["columns"]) == set(db[name].columns_dict), name


def test_full_text_search_finds_a_claim(get):
    got = rows(get, "/kb/claims.json?_search=balance+loss")
    assert [r["ref"] for r in got] == ["second-run/aux-loss-removed"]


def test_facets_by_report_status_and_unit(get):
    data = get("/kb/claims.json?_facet=status&_facet=report&_facet=unit").json()
    facets = {f: {v["value"]: v["count"] for v in data["facet_results"][f]["results"]} for f in data["facet_results"]}
    assert facets["status"] == {"confirmed": 7, "contradicted": 1, "derived": 1}
    assert facets["report"]["second-run"] == 5


def test_csv_and_json_exports(get):
    r = get("/kb/claims.csv?_size=max")
    assert r.status_code == 200
    table = list(csv.DictReader(io.StringIO(r.text)))
    assert len(table) == CLAIMS
    assert {"ref", "statement", "figure", "citation"} <= set(table[0])
    assert len(get("/kb/claims.json?_shape=array&_size=max").json()) == CLAIMS


def test_a_claims_page_shows_citation_status_and_source_link(get):
    html = get("/kb/claims/example-run~2Funexpected-interruptions").text
    assert 'id="kb-citation-text" class="kb-cite-text">419 interruptions — An Example Training Report' in html
    assert '<span class="kb-status kb-confirmed" title="status">confirmed</span>' in html
    assert '<a class="kb-source" href="https://example.org/report"' in html


def test_the_heatmap_page_colours_each_report_and_omission(get):
    html = get("/omissions").text
    assert 'data-report="second-run" data-omission="contamination" data-status="disclosed"' in html
    assert 'data-report="example-run" data-omission="failed-runs" data-status="none"' in html
    assert html.count('<td class="kb-cell kb-absent"') == 2


def test_contributor_html_is_escaped_everywhere(get):
    for path in ["/kb/claims", "/kb/claims/hostile-run~2Fscripted", "/kb/reports", "/omissions", "/kb/sources",
                 "/kb/disclosures", "/kb/claims?_search=interruptions", "/claims", "/claims?q=interruptions",
                 "/claims?report=hostile-run", "/patterns", "/graph", "/charts", "/kb/disputed_claims",
                 "/kb/citable_figures", "/kb/claims_for_pattern"]:
        html = get(path).text
        assert "<script>alert(" not in html, path
        assert "<img src=x" not in html and "<b>Evil</b>" not in html, path
        assert 'href="javascript:' not in html, path


def test_robots_and_sql_time_limit_are_set(get):
    settings = get("/-/settings.json").json()
    assert settings["sql_time_limit_ms"] == 5000 and settings["default_page_size"] == 25


# A real server, started the way users start it.


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    claims, site = make_site(tmp_path_factory.mktemp("served"))
    with kb_serve(claims, site) as base:
        yield base, site


def test_kb_serve_builds_then_serves_on_loopback(server):
    base, site = server
    assert (site / "kb.db").exists()
    assert httpx.get(f"{base}/").status_code == 200
    claims = httpx.get(f"{base}/kb/claims.json?_shape=array&_size=max").json()
    assert len(claims) == CLAIMS
    assert httpx.get(f"{base}/omissions").status_code == 200
    assert httpx.get(f"{base}/kb/claims.csv").status_code == 200


def test_the_server_refuses_writes(server):
    base, _ = server
    r = httpx.get(f"{base}/kb.json", params={"sql": "delete from claims"})
    assert r.status_code == 400
    assert len(httpx.get(f"{base}/kb/claims.json?_shape=array&_size=max").json()) == CLAIMS


def test_a_page_per_pattern_lists_its_evidence_and_links_its_chart(get):
    html = get("/patterns/failure-scaling").text
    assert 'data-strength="2"' in html
    assert html.count('<td><a href="/kb/claims/') == 4
    assert "About two machines failed every day." in html
    assert 'href="/charts/failure-scaling"' in html
    assert get("/patterns/no-such-pattern").status_code == 404


def test_the_graph_page_lists_patterns_and_reports_and_serves_a_reports_claims(get):
    html = get("/graph").text
    assert html.count('class="kb-focus" data-kind="pattern"') == 5
    assert html.count('class="kb-focus" data-kind="report"') == 2  # the reports with claims linked to a pattern
    assert '<script src="/static/vendor/cytoscape.min.js"></script>' in html
    got = get("/graph/report/second-run.json").json()
    assert {c["ref"]: (c["patterns"], c["evidence"]) for c in got["claims"]} == {
        "second-run/mfu": (["arch-is-infra", "failure-scaling"], 1),
        "second-run/aux-loss-removed": (["spike-layers"], 0),  # contradicted: linked, not evidence
        "second-run/job-gpus": (["failure-scaling"], 1), "second-run/failures-per-day": (["failure-scaling"], 1)}
    assert get("/graph/report/nope.json").status_code == 404


def test_the_failure_scaling_chart_links_each_point_to_its_claim(get):
    html = get("/charts/failure-scaling").text
    assert '<script src="/static/vendor/vega-lite.min.js"></script>' in html
    assert '<a href="/kb/claims/second-run~2Ffailures-per-day">about 2 failures per day</a>' in html
    assert get("/charts/nope").status_code == 404


def test_robots_policy_keeps_crawlers_off_sql_and_exports(get):
    r = get("/robots.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "Disallow: /kb?sql=" in r.text and "Disallow: /*.csv" in r.text


def test_a_pathological_query_ends_at_the_time_limit_and_the_server_keeps_serving(server):
    base, _ = server
    endless = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    r = httpx.get(f"{base}/kb", params={"sql": endless}, timeout=60)  # a hang is the failure
    assert r.status_code == 400 and "took too long" in r.text
    assert httpx.get(f"{base}/-/versions.json").status_code == 200
    assert httpx.get(f"{base}/kb/claims.json?_size=1").status_code == 200


def test_a_copy_of_site_serves_as_a_read_only_replica(server, tmp_path):
    # What the README says to do on another machine: copy the built site/ and run plain `datasette serve`.
    _, site = server
    replica = tmp_path / "replica"
    shutil.copytree(site, replica, ignore=shutil.ignore_patterns("*.png"))
    port = free_port()
    datasette = Path(sys.executable).parent / "datasette"
    proc = subprocess.Popen([str(datasette), "serve", str(replica), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(f"{base}/-/databases.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        dbs = httpx.get(f"{base}/-/databases.json").json()
        assert [d["is_mutable"] for d in dbs if d["name"] == "kb"] == [False]
        assert len(httpx.get(f"{base}/kb/claims.json?_shape=array&_size=max").json()) == CLAIMS
        assert httpx.get(f"{base}/omissions").status_code == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_facet_by_pattern(get):
    """Counting patterns reads every claim's JSON list, so the claims page offers it as a link (its cheap
    facets are on by default)."""
    page = get("/kb/claims").text
    assert 'href="/kb/claims?_facet_array=patterns"' in page
    default = get("/kb/claims.json").json()["facet_results"]
    assert set(default) == {"report", "status", "unit", "citable"}
    data = get("/kb/claims.json?_facet_array=patterns").json()
    counts = {v["value"]: v["count"] for v in data["facet_results"]["patterns"]["results"]}
    assert counts["failure-scaling"] == 4


def test_the_site_tells_what_a_correction_to_a_claim_touches(get):
    got = rows(get, "/kb/claim_impact?claim=example-run/snapshot-days")
    assert [(r["touches"], r["what"]) for r in got] == [("derived figure", "example-run/hours-between-interruptions")]
    got = rows(get, "/kb/claim_impact?claim=example-run/unexpected-interruptions")
    assert ("pattern", "failure-scaling") in [(r["touches"], r["what"]) for r in got]
    assert ("judgement", "example-run on ops-staffing") in [(r["touches"], r["what"]) for r in got]


def test_the_sites_own_pages_try_a_query_the_time_limit_ended_once_more():
    """Under heavy load (16 clients on 2 cores, 1,000,000 claims) a page's few-row query can reach the SQL time
    limit while it waits for the interpreter; the heatmap and pattern pages try it once more instead of failing
    with a 500."""
    import importlib.util

    from datasette.database import QueryInterrupted

    spec = importlib.util.spec_from_file_location("kb_site", Path(__file__).parent.parent / "site/plugins/kb_site.py")
    kb_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kb_site)

    class Busy:
        """A database whose first query is interrupted, as Datasette interrupts one at its time limit."""

        def __init__(self, interruptions: int):
            self.left, self.calls = interruptions, 0

        async def execute(self, sql, params=None):
            self.calls += 1
            if self.left:
                self.left -= 1
                raise QueryInterrupted(Exception("interrupted"), sql, params)
            return "rows"

    once = Busy(1)
    assert asyncio.run(kb_site._query(once, "select 1")) == "rows" and once.calls == 2
    twice = Busy(2)
    with pytest.raises(QueryInterrupted):
        asyncio.run(kb_site._query(twice, "select 1"))

    class Datasette:
        def get_database(self, name):
            return Busy(2)

    page = kb_site._busy_is_503(kb_site.omissions_page)
    r = asyncio.run(page(Datasette(), None))
    assert r.status == 503 and "too busy" in r.body and r.headers["Retry-After"] == "5"


def test_the_about_page_states_the_staleness_limit_the_build_used(get):
    import re

    text = " ".join(get("/about").text.split())
    assert re.search(r"its check is less than 365 days old \(<code>stale_after_days</code>", text)
