"""Citing checked figures: `kb cite`, `kb search`, `kb check`, `kb render`, `kb plan checkpoint`."""

from __future__ import annotations

import json
import shutil
import textwrap
from datetime import date

import pytest

from conftest import CLAIMS, GOOD, ROOT, TODAY, VOCABULARY, replace
from kb.cite import Index
from kb.docs import figures_in, matches
from kb.load import load_vocabulary
from kb.model import Claim
from kb.pipeline import validate_files, validate_kb
from kb.plan import checkpoint_plan, daly_interval, mtbf_hours, young_interval
from kb.units import index as unit_index

DOC = ROOT / "docs" / "checkpoint-planning.md"


@pytest.fixture(autouse=True)
def in_the_fixture_knowledge_base(monkeypatch):
    """Run from the fixture knowledge base's folder: the commands find its claims/ as they find a repository's."""
    monkeypatch.chdir(CLAIMS.parent)


def test_cite_as_markdown_text_bibtex_and_json(kb):
    ref = "llama-3-405b/unexpected-interruptions"
    md = kb("cite", ref).stdout.strip()
    assert md == ("419 interruptions ([The Llama 3 Herd of Models](https://arxiv.org/abs/2407.21783), Sec. 3.3.4; "
                  "checked 2026-12-01, confirmed)")
    text = kb("cite", ref, "--format", "text").stdout
    assert text.startswith("419 interruptions — The Llama 3 Herd of Models (Meta, 2024), Sec. 3.3.4")
    bib = kb("cite", "deepseek-v3/total-gpu-hours", "--format", "bibtex").stdout
    assert bib.startswith("@misc{deepseek:v3:total:gpu:hours,") and "howpublished = {\\url{https://arxiv.org/abs/2412.19437}}" in bib
    assert "note = {2.788M GPU-hours; Abstract; Table 1; checked 2026-12-01; confirmed" in bib
    data = json.loads(kb("cite", ref, "--format", "json").stdout)
    assert (data["figure"], data["value"], data["citable"], data["source"]["url"]) == \
           ("419 interruptions", 419, True, "https://arxiv.org/abs/2407.21783")


def test_a_derived_figure_cites_its_inputs_and_formula(kb):
    out = kb("cite", "deepseek-v3/total-gpu-hours-sum").stdout
    assert "derived as `pretraining-gpu-hours + context-extension-gpu-hours + post-training-gpu-hours`" in out
    assert "2664K GPU-hours (`deepseek-v3/pretraining-gpu-hours`)" in out and "119K GPU-hours" in out


def test_a_contradicted_claim_is_refused_unless_allowed(kb):
    r = kb("cite", "deepseek-v3/auxiliary-loss-removed")
    assert r.exit_code == 1
    assert "cannot be cited: it is contradicted: An auxiliary loss is kept" in r.stderr
    assert kb("cite", "deepseek-v3/auxiliary-loss-removed", "--allow").exit_code == 0


def test_a_derived_figure_resting_on_an_unverified_assumption_is_refused(kb):
    # The article's 43-minute interval assumes a 5-minute save that no report states.
    r = kb("cite", "lessons-from-published-training-runs/optimal-checkpoint-interval")
    assert r.exit_code == 1 and "its input lessons-from-published-training-runs/save-minutes cannot be cited" in r.stderr


def test_a_stale_check_is_refused(kb, write, kb_dir):
    write(GOOD)
    r = kb("cite", "example-run/snapshot-days", "--claims", kb_dir, "--max-age", "30")
    assert r.exit_code == 1 and "its check is stale" in r.stderr


def test_an_unknown_reference_suggests_the_closest(kb):
    r = kb("cite", "llama-3-405b/unexpected-interruption")
    assert r.exit_code == 1 and "did you mean 'llama-3-405b/unexpected-interruptions'?" in r.stderr


def test_search_finds_claims_by_fuzzy_match(kb):
    r = kb("cite", "--search", "interuptions per GPU day llama")
    top = [line.split()[0] for line in r.stdout.splitlines()[:3]]
    assert "llama-3-405b/unexpected-interruptions-per-gpu-day" in top
    data = json.loads(kb("search", "spare nodes kept in reserve", "--format", "json").stdout)
    assert "bloom/spare-nodes" in [d["ref"] for d in data[:3]]


# Figures as people write them.


@pytest.fixture(scope="module")
def units():
    return unit_index(load_vocabulary(VOCABULARY))


def claim(value, unit, bound="exact"):
    return Claim.model_validate({"id": "x", "statement": "x", "value": value, "unit": unit, "status": "confirmed",
                                 "bound": bound})


@pytest.mark.parametrize(
    "text, value, unit, ok",
    [
        ("2.788M GPU-hours", "2.788M", "GPU-hours", True),
        ("2,788K GPU-hours", "2.788M", "GPU-hours", True),
        ("2.8 million GPU-hours", "2.788M", "GPU-hours", True),
        ("2.9 million GPU-hours", "2.788M", "GPU-hours", False),
        ("43 min", "0.72", "hours", True),
        ("0.72 h", "43", "minutes", True),
        ("50 min", "0.72", "hours", False),
        ("14.8T tokens", "14.8", "trillion tokens", True),
        ("14.8 trillion tokens", "14.8", "trillion tokens", True),
        ("35%", "35.3", "percent", True),
        ("30%", "35.3", "percent", False),
        ("38–43%", "[38, 43]", "percent", True),
        ("419 unexpected interruptions", "419", "interruptions", True),
        ("420 unexpected interruptions", "419", "interruptions", False),
    ],
)
def test_numbers_match_however_people_write_them(units, text, value, unit, ok):
    c = claim(json.loads(value) if value.startswith("[") else value, unit)
    assert any(matches(w, c, units) for w in figures_in(text)) is ok


# Planning documents.

PLANTED = textwrap.dedent("""\
    # A note with planted errors

    Llama 3 saw [419 unexpected interruptions](kb:llama-3-405b/unexpected-interruptions) (correct).
    It ran on [8,192 GPUs](kb:llama-3-405b/training-gpus) (wrong number).
    See [the spike table](kb:llama-3-405b/no-such-claim) (unknown reference).
    DeepSeek [removed the auxiliary loss](kb:deepseek-v3/auxiliary-loss-removed) (contradicted).
    The example run had [54 days](kb:example-run/snapshot-days) of statistics (stale).
    A [broken link](kb:llama-3-405b) and another (kb:bloom/spare-nodes without brackets.
    """)


@pytest.fixture
def kb_with_example(tmp_path):
    """The real knowledge base plus the example record, whose checks were made on 2026-08-02."""
    d = tmp_path / "claims"
    shutil.copytree(CLAIMS, d)
    (d / "example-run.yaml").write_text(GOOD)
    return d


def test_check_reports_exactly_the_planted_problems(kb, kb_with_example, tmp_path):
    doc = tmp_path / "note.md"
    doc.write_text(PLANTED)
    r = kb("check", doc, "--claims", kb_with_example, "--max-age", "100")
    assert r.exit_code == 1
    lines = PLANTED.splitlines()
    col = lambda n, s: lines[n - 1].index(s) + 1  # noqa: E731
    assert r.stdout.splitlines() == [
        f"{doc}:4:{col(4, '[8,192')}: KB404: the link text says '8,192 GPUs', but kb:llama-3-405b/training-gpus is 16384 GPUs",
        f"{doc}:5:{col(5, '[the spike')}: KB402: unknown claim kb:llama-3-405b/no-such-claim",
        f"{doc}:6:{col(6, '[removed')}: KB403: kb:deepseek-v3/auxiliary-loss-removed cannot be cited: it is contradicted: An auxiliary loss is "
        "kept: a complementary sequence-wise balance loss with alpha = 0.0001. The main balancing is bias-based "
        "(gamma = 0.001), so the loss is minimised, not removed.",
        f"{doc}:7:{col(7, '[54 days')}: KB403: kb:example-run/snapshot-days cannot be cited: its check is stale: "
        f"{(TODAY - date(2026, 8, 2)).days} days old (limit 100)",
        f"{doc}:8:{col(8, '[broken')}: KB401: malformed kb: link 'kb:llama-3-405b': write kb:report/claim",
        f"{doc}:8:{col(8, '(kb:bloom')}: KB401: malformed kb: link: write [text](kb:report/claim) on one line",
    ]


def test_check_as_json_and_as_github_annotations(kb, tmp_path):
    doc = tmp_path / "note.md"
    doc.write_text("We saw [420 interruptions](kb:llama-3-405b/unexpected-interruptions).\n")
    data = json.loads(kb("check", doc, "--format", "json").stdout)
    assert data["ok"] is False and data["problems"][0]["line"] == 1
    r = kb("check", doc, env={"GITHUB_ACTIONS": "true"})
    assert r.stdout.startswith(f"::error file={doc},line=1,col=8,title=KB404::the link text says '420 interruptions'")


def test_the_worked_example_checks_out(kb):
    r = kb("check", DOC, "--claims", CLAIMS)
    assert r.exit_code == 0, r.stdout
    assert "1 document: 0 problems" in r.stderr


def test_changing_a_cited_figure_fails_the_worked_example_at_its_line(kb, tmp_path):
    d = tmp_path / "claims"
    shutil.copytree(CLAIMS, d)
    opt = d / "opt-175b.yaml"
    text = opt.read_text()
    assert text.count("value: 992\n") == 1
    opt.write_text(text.replace("value: 992\n", "value: 1024\n"))  # paper-gpus, as if corrected
    r = kb("check", DOC, "--claims", d)
    assert r.exit_code == 1
    line = next(i for i, l in enumerate(DOC.read_text().splitlines(), 1) if "kb:opt-175b/paper-gpus" in l)
    col = DOC.read_text().splitlines()[line - 1].index("[992 GPUs]") + 1
    assert r.stdout.splitlines() == [
        f"{DOC}:{line}:{col}: KB404: the link text says '992 GPUs', but kb:opt-175b/paper-gpus is 1024 GPUs"]


def test_render_links_sources_and_adds_a_footnote_per_figure(kb, tmp_path):
    out = tmp_path / "note.md"
    r = kb("render", DOC, "-o", out, "--claims", CLAIMS)
    assert r.exit_code == 0
    text = out.read_text()
    assert "[419 unexpected interruptions](https://arxiv.org/abs/2407.21783)[^kb1]" in text
    assert "[^kb1]: 419 interruptions, The Llama 3 Herd of Models (Meta, 2024), Sec. 3.3.4; checked 2026-12-01 " \
           "(confirmed; kb:llama-3-405b/unexpected-interruptions)." in text
    assert "](kb:" not in text  # no kb: link left


# Checkpoint arithmetic.


def test_the_seed_articles_arithmetic():
    mtbf = mtbf_hours(419, 54)
    assert mtbf == pytest.approx(3.093, abs=1e-3)
    assert young_interval(5, mtbf * 60) == pytest.approx(43.08, abs=0.01)
    assert daly_interval(5, mtbf * 60) == pytest.approx(39.8, abs=0.1)
    plan = checkpoint_plan(16384, 5, 419 / 54 / 16384, "x")
    assert plan.young_minutes == pytest.approx(43.08, abs=0.01)
    assert plan.expected_loss_percent == pytest.approx(23.2, abs=0.1)


def test_plan_checkpoint_scales_a_cited_rate_and_cites_it(kb):
    r = kb("plan", "checkpoint", "--gpus", "16384", "--save-minutes", "5", "--format", "json")
    data = json.loads(r.stdout)
    assert round(data["young_minutes"]) == 43 and data["basis"] == "llama-3-405b/unexpected-interruptions-per-gpu-day"
    assert data["citation"].startswith("about 4.7e-4 interruptions per GPU-day — The Llama 3 Herd of Models")
    bad = kb("plan", "checkpoint", "--gpus", "8", "--save-minutes", "1", "--basis", "bloom/spare-nodes")
    assert bad.exit_code == 1 and "not a failure rate per GPU-day" in bad.stderr


def test_the_worked_examples_table_is_what_kb_plan_computes(kb):
    text = DOC.read_text()
    for basis, row in [("llama-3-405b/unexpected-interruptions-per-gpu-day", "| Llama 3 rate |"),
                       ("opt-175b/machine-failures-per-gpu-day", "| OPT rate |")]:
        p = json.loads(kb("plan", "checkpoint", "--gpus", "4096", "--save-minutes", "3", "--basis", basis,
                          "--format", "json").stdout)
        expected = (f"{row} {p['mtbf_hours']:.1f} h | {p['young_minutes']:.0f} min | {p['daly_minutes']:.0f} min | "
                    f"{p['expected_loss_percent']:.1f}% |")
        assert expected in text
