"""Drift on the site: a drifted claim's page and row carry a badge, and the canned query "drifted or unreachable
sources" lists what the last kb reverify did not find. (In Chromium: tests/test_browser.py.)"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from conftest import TODAY
from kb.store import build
from sitekb import add_drift, kb_serve, make_site


@pytest.fixture(scope="module")
def get(tmp_path_factory):
    """get(path) → the response of an in-process Datasette serving a small site whose last reverify found drift."""
    from datasette.app import Datasette

    claims, site = make_site(tmp_path_factory.mktemp("drift"))
    add_drift(claims)
    build(claims, site / "kb.db", today=TODAY)
    ds = Datasette([], config_dir=site)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(ds.invoke_startup())
    yield lambda path: loop.run_until_complete(ds.client.get(path))
    loop.close()


def test_the_canned_query_lists_drifted_claims_worst_first(get):
    r = get("/kb/drifted_sources.json?_shape=objects")
    assert r.status_code == 200
    rows = r.json()["rows"]
    assert [(x["claim"], x["result"]) for x in rows] == [("example-run/unexpected-interruptions", "missing")]
    assert rows[0]["detail"] == "not in paper (added 2026-12-01)" and rows[0]["checked"] == TODAY.isoformat()
    meta = get("/-/metadata.json").json()["databases"]["kb"]["queries"]["drifted_sources"]
    assert meta["title"] == "Drifted or unreachable sources"


def test_a_drifted_claims_page_shows_its_badge_and_why(get):
    html = get("/kb/claims/example-run~2Funexpected-interruptions").text
    assert '<span class="kb-status kb-drifted" title="its quote was not found when re-verified on 2026-12-01' in html
    assert "<strong>Drifted:</strong> its quote was not found" in html
    derived = get("/kb/claims/example-run~2Fhours-between-interruptions").text
    assert "kb-drifted" in derived and "its input example-run/unexpected-interruptions has drifted" in derived
    found = get("/kb/claims/second-run~2Faux-loss-removed").text
    assert "kb-drifted" not in found


def test_the_claims_table_marks_drifted_rows(get):
    html = get("/kb/claims?drift__notblank=1").text
    assert html.count('<span class="kb-status kb-drifted"') == 2
    rows = get("/kb/reverify.json?_shape=objects").json()["rows"]
    assert {x["claim"]: x["result"] for x in rows} == {"example-run/unexpected-interruptions": "missing",
                                                      "example-run/snapshot-days": "found",
                                                      "second-run/aux-loss-removed": "found",
                                                      "hostile-run/scripted": "found"}


@pytest.fixture(scope="module")
def drift_server(tmp_path_factory):
    """`kb serve` on a small site whose last reverify found drift (the results in .cache/ beside claims/)."""
    claims, site = make_site(tmp_path_factory.mktemp("drift-served"))
    add_drift(claims)
    with kb_serve(claims, site) as base:
        yield base, site


def test_kb_serve_builds_with_the_last_results(drift_server):
    base, _ = drift_server
    rows = httpx.get(f"{base}/kb/drifted_sources.json?_shape=objects").json()["rows"]
    assert [x["claim"] for x in rows] == ["example-run/unexpected-interruptions"]
