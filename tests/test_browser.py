"""The site in a real headless Chromium (Debian's chromium, driven by playwright): what a person sees and does,
at a desktop width (1400 px) and a phone's (390 px).

These tests never skip: without a browser they fail, because the site is not checked without one. Every page they
open is saved as a screenshot in build/test-artefacts/ (or $KB_TEST_ARTEFACTS), for a person to look at.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from test_site import server  # noqa: F401 - the real server fixture, started by `kb serve`

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
ARTEFACTS = Path(os.environ.get("KB_TEST_ARTEFACTS", Path(__file__).resolve().parent.parent / "build" / "test-artefacts"))
WIDTHS = [1400, 390]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed for the browser tests: apt-get install chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


def open_page(browser, width=1400, **context):
    """A page of a fresh context, recording dialogs and JavaScript errors (console errors, uncaught exceptions)."""
    ctx = browser.new_context(viewport={"width": width, "height": 900}, **context)
    page = ctx.new_page()
    page.dialogs, page.errors = [], []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: page.errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(f"exception: {e}"))
    return page


@pytest.fixture
def page(browser):
    p = open_page(browser)
    yield p
    p.context.close()


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def sized(browser, request):
    p = open_page(browser, request.param)
    p.width = request.param
    yield p
    p.context.close()


def shot(page, name: str) -> None:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    page.screenshot(path=str(ARTEFACTS / f"{'home' + name if name[:1].isdigit() else name}.png"), full_page=True)


def settle(page) -> None:
    """Wait for the page's drawing: the chart's Vega view, the graph's layout."""
    page.wait_for_load_state("load")
    if page.locator("#kb-chart").count():
        page.wait_for_selector("#kb-chart[data-ready='1'] svg")
    if page.locator("#kb-graph").count():
        page.wait_for_function("window.kbGraph && kbGraph.cy.nodes().length > 0")


PAGES = ["/", "/claims", "/claims?q=interruptions", "/omissions", "/graph", "/graph#report:second-run", "/patterns",
         "/patterns/failure-scaling", "/patterns/spike-layers", "/charts", "/charts/failure-scaling", "/kb",
         "/kb/claims", "/kb/claims?_search=interruptions", "/kb/claims/example-run~2Funexpected-interruptions",
         "/kb/claims/second-run~2Faux-loss-removed", "/kb/claims/hostile-run~2Fscripted", "/kb/reports",
         "/kb/sources", "/kb/disclosures", "/kb/verdicts", "/kb/stale_checks", "/kb/disputed_claims",
         "/kb/citable_figures", "/kb/claim_impact", "/kb/claims_for_pattern", "/kb/reports_omitting",
         "/kb/derived_figures", "/about"]


# 6 and 7: every page, at both widths: no JavaScript error, nothing wider than the screen (tables scroll inside
# their own box), a screenshot.


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"{w}px")
def test_every_page_fits_the_screen_without_errors(browser, server, width):
    base, _ = server
    page = open_page(browser, width)
    try:
        too_wide = {}
        for path in PAGES:
            page.goto(f"{base}{path}")
            settle(page)
            page_width = page.evaluate("document.documentElement.scrollWidth")
            if page_width > width:
                too_wide[path] = page_width
            shot(page, f"{path}-{width}px")
        assert page.errors == []
        assert too_wide == {}
    finally:
        page.context.close()


def test_a_wide_table_scrolls_inside_its_own_box(browser, server):
    base, _ = server
    page = open_page(browser, 390)
    try:
        page.goto(f"{base}/claims")
        box = page.locator(".kb-scroll").first
        assert box.evaluate("e => e.scrollWidth > e.clientWidth")  # the table is wider than the phone...
        assert page.evaluate("document.documentElement.scrollWidth") == 390  # ...the page is not
    finally:
        page.context.close()


# 1. The reading view


def test_browse_search_and_cite_a_claim(page, server):
    base, _ = server
    page.goto(f"{base}/")
    assert "report-claims" in page.title()
    page.click(".kb-nav a[href='/claims']")
    headers = page.locator(".kb-reading-table thead th").all_inner_texts()
    assert headers == ["Report", "Statement", "Figure", "Status", "Source", "Checked"]
    page.fill("input#kb-q", "unexpected interruptions")
    page.press("input#kb-q", "Enter")
    page.wait_for_url("**q=unexpected*")
    assert "most relevant first" in page.locator(".kb-count").inner_text()
    page.locator("a[href*='example-run~2Funexpected-interruptions']").first.click()
    citation = page.locator("#kb-citation-text")
    assert citation.inner_text().startswith("419 interruptions — An Example Training Report (Example Lab, 2024)")
    assert page.locator(".kb-status.kb-confirmed").first.is_visible()
    assert page.locator("a.kb-source").get_attribute("href") == "https://example.org/report"


def test_the_full_table_opens_on_its_search_box_not_its_column_list(page, server):
    base, _ = server
    page.goto(f"{base}/kb/claims")
    assert page.locator("dl.column-descriptions").is_hidden()
    assert page.locator("details.kb-columns dl").is_hidden()  # collapsed
    assert page.locator("input#_search").bounding_box()["y"] < 600
    page.click("details.kb-columns summary")
    assert page.locator("details.kb-columns dt", has_text="citation").is_visible()
    heights = sorted(r.bounding_box()["height"] for r in page.locator("table.rows-and-columns tbody tr").all())
    assert heights[len(heights) // 2] < 120  # compact rows: long texts get wide columns, the table scrolls


# 4. One citation rule


def test_the_citation_box_refuses_a_contradicted_claim_and_says_why(page, server):
    base, _ = server
    page.goto(f"{base}/kb/claims/second-run~2Faux-loss-removed")
    assert page.locator("#kb-citation-text").count() == 0 and page.locator("button.kb-copy").count() == 0
    assert page.locator("#kb-why-not").inner_text() == ("it is contradicted: Not removed; a sequence-wise balance "
                                                        "loss with alpha 0.0001 remains")
    assert page.locator(".kb-refusal").is_visible()


def test_copy_puts_the_citation_on_the_clipboard(browser, server):
    base, _ = server
    page = open_page(browser, permissions=["clipboard-read", "clipboard-write"])
    try:
        page.goto(f"{base}/kb/claims/example-run~2Funexpected-interruptions")
        page.click("button.kb-copy")
        page.wait_for_function("document.querySelector('.kb-copy-said').textContent !== ''")
        assert page.locator(".kb-copy-said").inner_text() == "Copied to the clipboard"
        assert page.evaluate("navigator.clipboard.readText()") == page.locator("#kb-citation-text").inner_text()
    finally:
        page.context.close()


def test_without_a_clipboard_copy_selects_the_citation_and_says_so(browser, server):
    # a plain-http replica: browsers offer no clipboard API outside secure pages
    base, _ = server
    page = open_page(browser)
    page.add_init_script("Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined})")
    try:
        page.goto(f"{base}/kb/claims/example-run~2Funexpected-interruptions")
        assert page.evaluate("navigator.clipboard") is None
        page.click("button.kb-copy")
        assert page.locator(".kb-copy-said").inner_text() == "Selected: press Ctrl+C (⌘C) to copy"
        assert page.evaluate("getSelection().toString()") == page.locator("#kb-citation-text").inner_text()
        assert page.errors == []
    finally:
        page.context.close()


# 2. Charts


def inside(inner: dict, outer: dict, slack: float = 0.5) -> bool:
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


def test_every_chart_label_is_inside_its_frame(sized, server):
    base, _ = server
    sized.goto(f"{base}/charts/failure-scaling")
    settle(sized)
    frame = sized.locator("#kb-chart svg").bounding_box()
    assert frame["width"] <= sized.width
    labels = sized.locator("#kb-chart svg text")
    assert labels.count() > 8
    outside = [t.text_content() for t in labels.all() if not inside(t.bounding_box(), frame)]
    assert outside == []
    shot(sized, f"chart-{sized.width}px")


def test_the_chart_has_log_ticks_a_legend_and_one_measure(page, server):
    base, _ = server
    page.goto(f"{base}/charts/failure-scaling")
    settle(page)
    titles = page.locator("#kb-chart g.role-axis-title text").all_text_contents()
    assert sorted(titles) == ["Failures per GPU-day", "GPUs in the training job"]
    x_ticks = page.locator("#kb-chart g.role-axis[aria-label^='X-axis'] g.role-axis-label text").all_text_contents()
    y_ticks = page.locator("#kb-chart g.role-axis[aria-label^='Y-axis'] g.role-axis-label text").all_text_contents()
    assert x_ticks == ["1k", "10k"] and y_ticks == ["0.0001", "0.001", "0.01"]  # powers of ten on log scales
    legend = page.locator("#kb-chart g.role-legend").text_content()
    assert "Counted" in legend and "failures" in legend


def test_a_chart_point_has_a_tooltip_with_its_citation_and_leads_to_its_claim(page, server):
    base, _ = server
    page.goto(f"{base}/charts/failure-scaling")
    settle(page)
    point = page.locator("#kb-chart g.mark-symbol path").first
    point.hover()
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible")
    text = tooltip.inner_text()
    assert "A Second Report on Scaling" in text and "0.00098" in text
    assert "about 2 failures per day — A Second Report on Scaling (Other Lab, 2025)" in text
    point.click()
    page.wait_for_url("**/kb/claims/second-run~2Ffailures-per-day")
    assert page.locator("#kb-citation-text").inner_text().startswith("about 2 failures per day")


def test_the_chart_resizes_with_the_window(page, server):
    base, _ = server
    page.goto(f"{base}/charts/failure-scaling")
    settle(page)
    wide = page.locator("#kb-chart svg").bounding_box()["width"]
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_function("document.querySelector('#kb-chart svg').getBoundingClientRect().width < 390")
    assert wide > 1000
    assert page.evaluate("document.documentElement.scrollWidth") == 390


# 3. The graph


LABEL_BOXES = """() => {
  const cy = kbGraph.cy, box = cy.container().getBoundingClientRect();
  return {width: box.width, height: box.height, nodes: cy.nodes().map(n => {
    const b = n.renderedBoundingBox({includeLabels: true, includeOverlays: false});
    return {id: n.id(), label: n.data('label'), x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2};
  })};
}"""


def labels_readable(page) -> list[str]:
    """Problems with the graph's labels: a label outside the frame, two labels overlapping."""
    got = page.evaluate(LABEL_BOXES)
    problems = [f"{n['id']} outside" for n in got["nodes"]
                if n["x1"] < 0 or n["y1"] < 0 or n["x2"] > got["width"] or n["y2"] > got["height"]]
    nodes = got["nodes"]
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if a["x1"] < b["x2"] and b["x1"] < a["x2"] and a["y1"] < b["y2"] and b["y1"] < a["y2"]:
                problems.append(f"{a['id']} overlaps {b['id']}")
    return problems


def click_node(page, node_id: str) -> None:
    page.locator("#kb-graph").scroll_into_view_if_needed()  # a click lands only on what is on the screen
    pos = page.evaluate(f"kbGraph.cy.getElementById({node_id!r}).renderedPosition()")
    frame = page.locator("#kb-graph").bounding_box()
    page.mouse.click(frame["x"] + pos["x"], frame["y"] + pos["y"])


def test_the_graph_labels_every_node_inside_its_frame_without_overlaps(sized, server):
    base, _ = server
    sized.goto(f"{base}/graph")
    settle(sized)
    cy = "kbGraph.cy"
    assert sized.evaluate(f"{cy}.nodes('.kb-pattern').length") == 5
    assert sized.evaluate(f"{cy}.nodes('.kb-report').length") == 2
    assert sized.locator("#kb-graph").bounding_box()["width"] <= sized.width
    assert labels_readable(sized) == []
    shot(sized, f"graph-{sized.width}px")
    click_node(sized, "pattern:failure-scaling")  # a pattern's neighbourhood: the reports linked to it
    sized.wait_for_function(f"{cy}.nodes('.kb-focused').length === 1")
    assert sized.locator("#kb-graph-title").inner_text() == "Pattern failure-scaling"
    assert sorted(sized.evaluate(f"{cy}.nodes('.kb-report').map(n => n.data('label'))")) == ["example-run", "second-run"]
    assert labels_readable(sized) == []
    assert "backed by 2 reports" in sized.locator("#kb-graph-info").inner_text()
    click_node(sized, "report:second-run")  # a report's neighbourhood: its claims and their patterns
    sized.wait_for_function(f"{cy}.nodes('.kb-claim').length === 4")
    assert sorted(sized.evaluate(f"{cy}.nodes('.kb-claim').map(n => n.data('label'))")) == [
        "aux-loss-removed", "failures-per-day", "job-gpus", "mfu"]
    assert labels_readable(sized) == []
    # the contradicted claim's line to its pattern is drawn as "linked, not evidence"
    assert sized.evaluate(f"{cy}.getElementById('claim:second-run/aux-loss-removed->pattern:spike-layers')"
                          ".hasClass('kb-weak')")
    assert sized.evaluate(f"{cy}.getElementById('claim:second-run/mfu->pattern:arch-is-infra').hasClass('kb-weak')") is False
    shot(sized, f"graph-report-{sized.width}px")
    click_node(sized, "claim:second-run/failures-per-day")
    assert sized.locator("#kb-graph-info a").get_attribute("href") == "/kb/claims/second-run~2Ffailures-per-day"
    sized.click("#kb-overview")
    assert sized.evaluate(f"{cy}.nodes('.kb-claim').length") == 0
    assert sized.errors == []


def test_the_graph_zooms_and_pans(page, server):
    base, _ = server
    page.goto(f"{base}/graph")
    settle(page)
    zoom = page.evaluate("kbGraph.cy.zoom()")
    page.click("#kb-zoom-in")
    assert page.evaluate("kbGraph.cy.zoom()") == pytest.approx(zoom * 1.25)
    page.click("#kb-zoom-out")
    page.click("#kb-zoom-out")
    assert page.evaluate("kbGraph.cy.zoom()") < zoom
    frame = page.locator("#kb-graph").bounding_box()
    before = page.evaluate("kbGraph.cy.pan()")
    page.mouse.move(frame["x"] + 10, frame["y"] + 10)  # the empty corner: dragging it pans
    page.mouse.down()
    page.mouse.move(frame["x"] + 110, frame["y"] + 60, steps=5)
    page.mouse.up()
    after = page.evaluate("kbGraph.cy.pan()")
    assert (after["x"] - before["x"], after["y"] - before["y"]) == (pytest.approx(100, abs=2), pytest.approx(50, abs=2))
    zoom = page.evaluate("kbGraph.cy.zoom()")
    page.mouse.move(frame["x"] + frame["width"] / 2, frame["y"] + frame["height"] / 2)
    page.mouse.wheel(0, -300)  # scrolling up zooms in
    page.wait_for_function(f"kbGraph.cy.zoom() > {zoom}")


def test_a_pattern_page_link_opens_the_graph_on_that_pattern(page, server):
    base, _ = server
    page.goto(f"{base}/patterns/failure-scaling")
    page.click("a[href='/graph#pattern:failure-scaling']")
    settle(page)
    page.wait_for_function("kbGraph.cy.nodes('.kb-focused').length === 1")
    assert page.locator("#kb-graph-title").inner_text() == "Pattern failure-scaling"


# The heatmap, and contributors' text


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


@pytest.mark.parametrize("path", ["/kb/claims", "/kb/claims/hostile-run~2Fscripted", "/kb/reports", "/omissions",
                                  "/graph", "/patterns/failure-scaling", "/kb/sources", "/kb/disclosures",
                                  "/kb/claims?_search=interruptions", "/claims", "/claims?q=interruptions",
                                  "/graph#report:hostile-run", "/patterns", "/charts"])
def test_hostile_records_render_inert(page, server, path):
    base, _ = server
    page.goto(f"{base}{path}")
    page.wait_for_load_state("load")
    assert page.dialogs == []
    schemes = page.eval_on_selector_all("a[href]", "as => as.map(a => a.protocol)")
    assert "javascript:" not in schemes and "file:" not in schemes
    assert page.locator("script", has_text="alert(").count() == 0


# The README's screenshots


def test_the_readme_shows_the_screenshots_the_script_makes(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    site_section = readme[readme.index("## The site"):readme.index("### Settings and hardening")]
    for name in ("heatmap.png", "chart.png"):
        assert f"](docs/img/{name})" in site_section
        assert (root / "docs" / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "img"
    run = subprocess.run([sys.executable, str(root / "scripts" / "screenshots"), "--claims",
                          str(root / "tests" / "fixtures" / "kb" / "claims"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for name in ("heatmap.png", "chart.png"):
        png = (out / name).read_bytes()
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and width == 1200 and height > 300, name


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
