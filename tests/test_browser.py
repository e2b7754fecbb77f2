"""The site in a real headless Chromium (Debian's chromium, driven by playwright): what a person sees and does.

These tests never skip: without a browser they fail, because the site is not checked without one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_site import server  # noqa: F401 - the real server fixture, started by `kb serve`

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed for the browser tests: apt-get install chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


def test_browse_search_and_cite_a_claim(page, server):
    base, _ = server
    page.goto(f"{base}/")
    assert "report-claims" in page.title()
    page.click("text=kb")
    page.click("a[href='/kb/claims']")
    page.fill("input#_search", "unexpected interruptions")
    page.press("input#_search", "Enter")
    page.wait_for_url("**_search=*")
    link = page.locator("a[href*='example-run~2Funexpected-interruptions']").first
    link.click()
    citation = page.locator("#kb-citation-text")
    assert citation.inner_text().startswith("419 interruptions — An Example Training Report (Example Lab, 2024)")
    assert page.locator(".kb-status.kb-confirmed").first.is_visible()
    assert page.locator("a.kb-source").get_attribute("href") == "https://example.org/report"
    page.click("button.kb-copy")
    assert page.locator("button.kb-copy").inner_text() == "Copied"


def test_the_heatmap_is_coloured(page, server):
    base, _ = server
    page.goto(f"{base}/omissions")
    cell = page.locator('td[data-report="second-run"][data-omission="contamination"]')
    assert cell.locator("a").first.inner_text().strip() == "disclosed"
    # The record declares contamination disclosed, but none of its claims says anything about it.
    assert cell.locator("a.kb-disagree").inner_text() == "auditor: absent"
    green = cell.evaluate("e => getComputedStyle(e).backgroundColor")
    red = page.locator('td[data-report="second-run"][data-omission="failed-runs"]').evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert green == "rgb(46, 158, 79)" and red == "rgb(214, 69, 69)"
    page.screenshot(path=str(Path(server[1]) / "heatmap.png"), full_page=True)


@pytest.mark.parametrize("path", ["/kb/claims", "/kb/claims/hostile-run~2Fscripted", "/kb/reports", "/omissions", "/graph", "/patterns/failure-scaling",
                                  "/kb/sources", "/kb/disclosures", "/kb/claims?_search=interruptions"])
def test_hostile_records_render_inert(page, server, path):
    base, _ = server
    page.goto(f"{base}{path}")
    page.wait_for_load_state("load")
    assert page.dialogs == []
    schemes = page.eval_on_selector_all("a[href]", "as => as.map(a => a.protocol)")
    assert "javascript:" not in schemes and "file:" not in schemes
    assert page.locator("script", has_text="alert(").count() == 0


def test_the_graph_shows_a_reports_claims_on_demand(page, server):
    base, _ = server
    page.goto(f"{base}/graph")
    assert page.locator("#kb-graph .kb-pattern").count() == 5
    assert page.locator("#kb-claims .kb-claim").count() == 0
    page.locator('.kb-report[data-report="second-run"]').click()
    assert page.locator("#kb-claims .kb-claim").count() == 4  # its claims that support a pattern
    assert page.locator("#kb-claims .kb-supports").count() == 5  # mfu supports two patterns
    dashes = {page.locator(sel).first.get_attribute("stroke-dasharray")
              for sel in ["#kb-claims .kb-supports", "#kb-links .kb-backs"]}
    assert dashes == {"5 3", None}  # edge types look different
    page.locator('.kb-report[data-report="second-run"]').click()
    assert page.locator("#kb-claims .kb-claim").count() == 0
    page.screenshot(path=str(Path(server[1]) / "graph.png"), full_page=True)


def test_a_chart_point_leads_to_its_claim(page, server):
    base, _ = server
    page.goto(f"{base}/charts/failure-scaling")
    page.locator("a.kb-point").first.click()
    page.wait_for_url("**/kb/claims/second-run~2Ffailures-per-day")
    assert page.locator("#kb-citation-text").inner_text().startswith("about 2 failures per day")


from test_site_drift import drift_server  # noqa: E402,F401 - kb serve on a site whose last reverify found drift


def test_a_drifted_claim_shows_its_badge(page, drift_server):
    base, site = drift_server
    page.goto(f"{base}/kb/drifted_sources")
    assert page.locator("td.col-claim").all_inner_texts() == ["example-run/unexpected-interruptions"]
    page.goto(f"{base}/kb/claims?drift__notblank=1")
    page.locator("a[href*='example-run~2Funexpected-interruptions']").first.click()
    page.wait_for_url("**/kb/claims/example-run~2Funexpected-interruptions")
    badge = page.locator(".kb-citation-box .kb-status.kb-drifted")
    assert badge.is_visible() and badge.inner_text() == "drifted"
    assert badge.get_attribute("title").startswith("its quote was not found when re-verified on 2026-12-01")
    colour = badge.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == "rgb(255, 227, 199)"
    page.screenshot(path=str(Path(site) / "drift.png"), full_page=True)
    page.goto(f"{base}/kb/claims/second-run~2Faux-loss-removed")
    assert page.locator(".kb-drifted").count() == 0
