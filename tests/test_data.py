"""The article's eight cases as records (the fixture knowledge base, a frozen copy of them): they validate, nothing
is lost on loading, the derived figures add up, and the article's errors are recorded as contradicted claims."""

from __future__ import annotations

import shutil

import pytest
import yaml

from conftest import CLAIMS, ROOT
from kb.load import record_files
from kb.model import parse_number
from kb.pipeline import validate_files, validate_kb

CASES = ["llama-3-405b", "deepseek-v3", "kimi-k2", "olmo", "opt-175b", "bloom", "smollm3", "marin"]
ARTICLE = "lessons-from-published-training-runs"


@pytest.fixture(scope="module")
def kb():
    result = validate_kb(CLAIMS)
    return result, {rec.report.id: rec.report for rec in result.loaded.records}


def test_the_knowledge_base_validates_without_errors_or_warnings(kb):
    result, _ = kb
    assert [str(p) for p in result.problems] == []


def test_every_case_of_the_article_and_the_article_itself(kb):
    _, reports = kb
    assert set(reports) == set(CASES) | {ARTICLE}
    assert "DeepSeek-V3" in " ".join(s.title for s in reports["deepseek-v3"].sources) and \
        any("Insights" in s.title for s in reports["deepseek-v3"].sources)


def test_round_trip_every_claim_in_the_files_is_loaded_with_its_value_unchanged(kb):
    # Read the files a second, independent way (PyYAML's pure-Python composer, no typing of values) and compare
    # each claim's id and the figure as written with what the loader produced.
    _, reports = kb
    seen = 0
    for path in record_files(CLAIMS):
        root = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
        fields = {k.value: v for k, v in root.value}
        loaded = reports[fields["id"].value]
        assert len(fields["claims"].value) == len(loaded.claims), path
        for node, claim in zip(fields["claims"].value, loaded.claims):
            raw = {k.value: v for k, v in node.value}
            assert raw["id"].value == claim.id
            if "value" not in raw:
                assert claim.value is None
                continue
            v = raw["value"]
            if isinstance(v, yaml.SequenceNode):
                assert claim.value == (parse_number(v.value[0].value), parse_number(v.value[1].value))
            else:
                assert claim.value_text == v.value and claim.value == parse_number(v.value)
            seen += 1
    assert seen > 300


def test_every_non_derived_claim_has_a_source_a_check_date_and_a_status(kb):
    _, reports = kb
    for r in reports.values():
        for c in r.claims:
            if c.status != "derived":
                assert c.source and c.verified, f"{r.id}/{c.id}"


@pytest.mark.parametrize("case", CASES)
def test_each_case_is_judged_on_all_five_omissions_and_says_what_it_does_not_say(kb, case):
    _, reports = kb
    r = reports[case]
    assert set(r.disclosures) == {"failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"}
    assert r.unsaid


@pytest.mark.parametrize(
    "ref, computed",
    [
        ("llama-3-405b/hours-between-interruptions", 54 * 24 / 419),
        ("llama-3-405b/table5-count-sum", 419),
        ("llama-3-405b/faulty-gpu-share-from-counts", 148 / 419 * 100),
        ("llama-3-405b/gpu-share-from-counts", 268 / 419 * 100),
        (f"{ARTICLE}/optimal-checkpoint-interval", (2 * (54 * 24 / 419 * 60) * 5) ** 0.5),
        (f"{ARTICLE}/checkpoint-overhead", (2 * 5 / (54 * 24 / 419 * 60)) ** 0.5 * 100),
        (f"{ARTICLE}/gpu-scale-ratio", 16384 / 384),
        ("deepseek-v3/total-gpu-hours-sum", 2_664_000 + 119_000 + 5_000),
        ("deepseek-v3/kv-cache-ratio", 516.096 / 70.272),
        ("bloom/spare-node-share", 4 / 48 * 100),
        ("kimi-k2/pretraining-tokens-sum", 15.5e12),
        ("smollm3/proxy-scale-up", 112),
    ],
)
def test_derived_figures_are_recomputed_and_agree(kb, ref, computed):
    result, _ = kb
    check = result.checked.derived[tuple(ref.split("/"))]
    assert check.ok, check
    assert check.computed == pytest.approx(computed, rel=1e-3)


def test_where_a_source_gets_its_own_arithmetic_wrong_both_figures_are_kept(kb):
    _, reports = kb
    llama, deepseek = reports["llama-3-405b"], reports["deepseek-v3"]
    printed = [c for c in llama.claims if c.value == 30.1 and c.status == "confirmed"]
    assert printed and "printed 30.1%" in (llama.claim("faulty-gpu-share-from-counts").note or "")
    assert any(c.value == 7.28 and c.status == "confirmed" for c in deepseek.claims)


@pytest.mark.parametrize(
    "ref, says",
    [
        ("deepseek-v3/auxiliary-loss-removed", "sequence-wise"),
        (f"{ARTICLE}/case-count", "8"),
        (f"{ARTICLE}/tenfold", "42.7"),
        ("opt-175b/logbook-quote", "araphrase"),
        ("llama-3-405b/data-mix-not-disclosed", "50"),
    ],
)
def test_the_articles_errors_are_contradicted_with_what_the_source_says(kb, ref, says):
    _, reports = kb
    report, claim = ref.split("/")
    c = reports[report].claim(claim)
    assert c.status == "contradicted"
    assert says in c.note


def test_llama_table_5_has_all_eighteen_rows(kb):
    _, reports = kb
    rows = [c for c in reports["llama-3-405b"].claims if c.locator and c.locator.startswith("Table 5")
            and c.unit == "interruptions" and c.status == "confirmed"]
    counts = sorted((c.value for c in rows), reverse=True)
    assert counts[:18] == [148, 72, 54, 35, 32, 19, 17, 7, 7, 6, 6, 3, 3, 2, 2, 2, 2, 2]


def test_the_articles_quotes_are_verbatim_in_the_stored_article(kb):
    _, reports = kb
    text = (ROOT / "docs/sources/lessons-from-published-training-runs.en.txt").read_text()
    for c in reports[ARTICLE].claims:
        if c.quote:
            assert c.quote in text, c.id
