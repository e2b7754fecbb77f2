"""The site's reading pages, in-process through Datasette's own client: the claims' reading view, pattern
strength, the citation decision, canned queries, index pages and the nav bar. What the small knowledge base
(tests/sitekb.py) cannot show is shown on the fixture knowledge base (the article and its eight reports)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from datetime import timedelta
from html import unescape

import pytest

from conftest import TODAY
from kb.cite import Index
from kb.pipeline import validate_kb
from kb.store import build
from sitekb import load_plugin, make_fixture_site, make_site


def client(site_dir):
    """get(path) → the response of an in-process Datasette serving site_dir; and the Datasette itself."""
    from datasette.app import Datasette

    ds = Datasette([], config_dir=site_dir)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(ds.invoke_startup())

    def get(path: str):
        return loop.run_until_complete(ds.client.get(path))

    get.ds, get.loop = ds, loop
    return get


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    claims, site = make_site(tmp_path_factory.mktemp("small"))
    build(claims, site / "kb.db", today=TODAY)
    get = client(site)
    yield get
    get.loop.close()


@pytest.fixture(scope="module")
def fixture_kb(tmp_path_factory):
    claims, site = make_fixture_site(tmp_path_factory.mktemp("fixture"))
    build(claims, site / "kb.db", today=TODAY)
    get = client(site)
    get.claims, get.db_path = claims, site / "kb.db"
    yield get
    get.loop.close()


def reading_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-ref="([^"]+)">', html)


# 1. Tables for reading


def test_the_reading_view_shows_the_columns_a_reader_wants(small):
    html = small("/claims").text
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", html).group(1)
    assert re.findall(r"<th>(.*?)</th>", head) == ["Report", "Statement", "Figure", "Status", "Source", "Checked"]
    assert len(reading_rows(html)) == 9
    row = re.search(r'<tr data-ref="example-run/unexpected-interruptions">(.*?)</tr>', html, re.S).group(1)
    assert "419 interruptions" in row and "kb-status kb-confirmed" in row and "2026-08-02" in row
    assert '<a href="https://example.org/report" title="https://example.org/report"' in row  # the source, shortened
    assert '<a class="kb-full" href="/kb/claims">the full table</a>' in html  # every column, one click away


def test_a_search_in_the_reading_view_puts_the_most_relevant_claim_first(fixture_kb):
    html = fixture_kb("/claims?q=interruptions").text
    got = reading_rows(html)
    conn = sqlite3.connect(fixture_kb.db_path)
    by_bm25 = [r for (r,) in conn.execute(
        "select c.ref from claims_fts join claims c on c.rowid = claims_fts.rowid "
        "where claims_fts match '\"interruptions\"' order by bm25(claims_fts), c.ref")]
    conn.close()
    assert len(by_bm25) > 5
    assert got == by_bm25[:50]  # most relevant first (FTS5's bm25), not by reference
    assert got != sorted(got)
    assert "most relevant first" in html
    assert 'href="/kb/claims?_search=interruptions"' in html  # the same search over the full table


def test_the_reading_view_filters_by_status_and_pages(fixture_kb):
    html = fixture_kb("/claims?status=contradicted").text
    conn = sqlite3.connect(fixture_kb.db_path)
    (contradicted,) = conn.execute("select count(*) from claims where status = 'contradicted'").fetchone()
    conn.close()
    assert len(reading_rows(html)) == contradicted and f'data-total="{contradicted}"' in html
    first, second = fixture_kb("/claims").text, fixture_kb("/claims?page=2").text
    assert len(reading_rows(first)) == 50 and 'rel="next"' in first
    assert not set(reading_rows(first)) & set(reading_rows(second))
    # quotes and operators are words, not FTS syntax
    assert fixture_kb('/claims?q=%22unbalanced+OR+NEAR(').status_code == 200


def test_the_full_claims_table_collapses_its_column_descriptions(small):
    html = small("/kb/claims").text
    described = len(small("/-/metadata.json").json()["databases"]["kb"]["tables"]["claims"]["columns"])
    assert '<details class="kb-columns">' in html and f"What the {described} columns mean" in html
    assert html.index('<details class="kb-columns">') < html.index('id="_search"')
    assert 'href="/claims">The reading view</a>' in html


# 3. Evidence strength


def test_strength_counts_reports_with_figures_of_their_own(fixture_kb):
    """failure-scaling is linked to claims of eight records, the article's among them; the article's are
    unverified, contradicted or derived from the reports' figures, so seven reports back it."""
    html = fixture_kb("/patterns/failure-scaling").text
    assert 'data-strength="7"' in html
    assert "Lessons from Published Training Runs" not in re.search(r'class="kb-strength".*?</p>', html, re.S).group(0)
    conn = sqlite3.connect(fixture_kb.db_path)
    linked = {r for (r,) in conn.execute("select report from claim_patterns where pattern = 'failure-scaling'")}
    assert len(linked) == 8 and "lessons-from-published-training-runs" in linked
    conn.close()
    index = fixture_kb("/patterns").text
    assert re.search(r'data-pattern="failure-scaling" data-strength="7"', index)


def test_a_contradicted_claim_is_no_evidence(small):
    # spike-layers' only claim is second-run's contradicted one
    html = small("/patterns/spike-layers").text
    assert 'data-strength="0"' in html and "weak evidence" in html and "not counted" in html


# 4. One citation rule


def test_the_citation_box_decides_as_kb_cite_for_every_claim(fixture_kb, tmp_path):
    """The box shows kb cite's decision and reason (Index.citable, stored by kb build) for every claim of the
    fixture, on the build's day and a year and more later, when many checks have gone stale."""
    from datasette.database import Database

    plugin = load_plugin()
    for day in (TODAY, TODAY + timedelta(days=400)):
        db_path = tmp_path / f"{day}.db"
        build(fixture_kb.claims, db_path, today=day)
        index = Index(validate_kb(fixture_kb.claims, today=day), day)
        get = client(fixture_kb.db_path.parent)
        db = get.ds.add_database(Database(get.ds, path=str(db_path), is_mutable=False), name=f"day{day:%Y%m%d}")
        refused = 0
        for ref in index.claims:
            ok, why = index.citable(ref)
            got = get.loop.run_until_complete(plugin.cite_decision(db, ref))
            assert (got["citable"], got["why"]) == (ok, why), ref
            refused += not ok
        assert refused > 20
        get.loop.close()


def test_a_contradicted_claim_is_refused_with_its_reason_and_its_correction(fixture_kb):
    html = fixture_kb("/kb/claims/lessons-from-published-training-runs~2Ftenfold").text
    assert 'id="kb-citation-text"' not in html
    why = unescape(re.search(r'<span id="kb-why-not">(.*?)</span>', html).group(1))
    assert why == ("it is contradicted: 16,384 / 384 = 42.7x, not tenfold (gpu-scale-ratio). OPT already needed "
                   "scripted host replacement and automatic recovery at about 1K GPUs")
    # the note names gpu-scale-ratio, a citable claim of the same record: offered instead, with its citation
    instead = re.search(r'<div class="kb-instead">(.*?)</div>', html, re.S).group(1)
    assert 'href="/kb/claims/lessons-from-published-training-runs~2Fgpu-scale-ratio"' in instead
    assert "42.7 x — Lessons from Published Training Runs" in unescape(instead)


def test_a_correction_is_offered_only_when_it_may_be_cited(fixture_kb):
    # deepseek-v3's note names kimi-k2/only-final-configuration, itself contradicted: nothing to cite instead
    html = fixture_kb("/kb/claims/deepseek-v3~2Fonly-final-configuration").text
    assert 'id="kb-why-not"' in html and 'class="kb-instead"' not in html


def test_a_stale_claim_is_refused_with_its_age(small):
    html = small("/kb/claims/second-run~2Fold-check").text
    assert '<span id="kb-why-not">its check is stale: 668 days old (limit 365)</span>' in html
    assert 'id="kb-citation-text"' not in html


def test_a_citable_claim_offers_its_citation_and_a_copy_button(small):
    html = small("/kb/claims/example-run~2Fhours-between-interruptions").text
    assert 'id="kb-citation-text"' in html and 'class="kb-copy"' in html and 'id="kb-why-not"' not in html


# 5. Canned queries and navigation


def rows(get, path):
    page, _, query = path.partition("?")
    r = get(f"{page}.json?{query}&_shape=objects&_size=max")
    assert r.status_code == 200, r.text[:300]
    return r.json()["rows"]


@pytest.mark.parametrize("query, blank, given", [
    ("stale_checks", "days=", "days=365"),  # blank: the staleness limit (365 in the vocabulary), not every claim
    ("claims_for_pattern", "pattern=", None),  # blank: every pattern
    ("reports_omitting", "omission=", None),  # blank: every omission
])
def test_a_blank_parameter_has_a_sensible_default(small, query, blank, given):
    got = rows(small, f"/kb/{query}?{blank}")
    assert got
    if given:
        assert got == rows(small, f"/kb/{query}?{given}")
    if query == "stale_checks":
        assert [r["ref"] for r in got] == ["second-run/old-check"]
        assert [r["ref"] for r in rows(small, "/kb/stale_checks?days=abc")] == ["second-run/old-check"]
    if query == "claims_for_pattern":
        assert len(got) == 6 and {r["pattern"] for r in got} == {"failure-scaling", "spike-layers", "arch-is-infra"}


@pytest.mark.parametrize("query, example", [
    ("claims_for_pattern", '<a href="?pattern=failure-scaling">failure-scaling</a>'),
    ("reports_omitting", '<a href="?omission=contamination">contamination</a>'),
    ("stale_checks", '<a href="?days=365">365</a>'),
    ("claim_impact", '<a href="?claim=example-run%2Funexpected-interruptions">example-run/unexpected-interruptions</a>'),
])
def test_every_parameter_comes_with_examples(small, query, example):
    html = small(f"/kb/{query}").text
    assert example in html
    assert small("/kb/claim_impact?claim=example-run/unexpected-interruptions").status_code == 200


def test_refs_link_to_their_claim_and_urls_read_as_host_and_path(small):
    html = small("/kb/disputed_claims").text
    assert '<a href="/kb/claims/second-run~2Faux-loss-removed">second-run/aux-loss-removed</a>' in html
    assert ('<a class="kb-url" href="https://example.org/second" title="https://example.org/second" '
            'rel="nofollow noopener noreferrer">example.org/second</a>') in html
    html = small("/kb/derived_figures").text
    assert '<a href="/kb/claims/example-run~2Fhours-between-interruptions">' in html


def test_long_urls_are_cut_to_host_and_path():
    plugin = load_plugin()
    long = "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/56_percent_update.md?x=1"
    assert plugin.short_url(long) == "github.com/facebookresearch/metaseq/blob/main/p…"  # 48 characters
    assert plugin.short_url("https://example.org/") == "example.org"


def test_patterns_and_charts_have_index_pages(small):
    html = small("/patterns").text
    assert html.count('<tr data-pattern=') == 5 and 'href="/patterns/failure-scaling"' in html
    assert 'href="/charts/failure-scaling"' in html
    html = small("/charts").text
    assert '<li data-chart="failure-scaling"><a href="/charts/failure-scaling">' in html and "— 1 report" in html
    assert "Failures per GPU-day against GPU count" in html  # the chart's title as its page draws it


NAV = '<a href="/"', '<a href="/claims"', '<a href="/omissions"', '<a href="/graph"', '<a href="/patterns"', \
    '<a href="/charts"'


@pytest.mark.parametrize("path", ["/", "/claims", "/omissions", "/graph", "/patterns", "/patterns/failure-scaling",
                                  "/charts", "/charts/failure-scaling", "/kb", "/kb/claims",
                                  "/kb/claims/example-run~2Funexpected-interruptions", "/kb/stale_checks", "/about"])
def test_every_page_has_the_nav_bar(small, path):
    html = small(path).text
    nav = re.search(r'<div class="kb-nav".*?</div>', html, re.S).group(0)
    assert all(link in nav for link in NAV), path
    here = path if path in ("/", "/claims", "/omissions", "/graph", "/patterns", "/charts") else None
    if here:
        assert f'<a href="{here}" aria-current="page">' in nav


# 2. Charts from SQL


def test_chart_points_come_from_the_knowledge_base_one_series_per_measure(fixture_kb):
    html = fixture_kb("/charts/failure-scaling").text
    rows = re.findall(r'<tr data-report="([^"]+)">\s*<td>.*?</td>\s*<td>([^<]+)</td>', html, re.S)
    assert rows == [("bloom", "failures"), ("opt-175b", "machines down"), ("llama-3-405b", "interruptions")]
    # the rate per GPU-day, as the article derives it for OPT and Llama 3 (2e-3 and 4.7e-4)
    rates = re.findall(r'<td class="kb-fig">([^<]+)</td>', html)
    assert rates == ["0.00036", "0.002", "0.00048"]
