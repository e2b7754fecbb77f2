"""The checks beyond the schema: each rule, and a record that breaks it."""

from __future__ import annotations

from datetime import date

import pytest

from conftest import GOOD, replace
from kb.pipeline import validate_files, validate_kb

TODAY = date(2026, 11, 29)


def problems(kb_dir, today=TODAY, strict=False):
    result = validate_kb(kb_dir, today=today)
    return [str(p) for p in result.problems if strict or p.severity == "error"]


def one(kb_dir, **kw) -> str:
    found = problems(kb_dir, **kw)
    assert len(found) == 1, found
    return found[0].split(": ", 1)[1]


def test_the_good_record_passes_every_check(write, kb_dir):
    write(GOOD)
    assert problems(kb_dir, strict=True) == []


def test_id_must_equal_the_file_name(write, kb_dir):
    write(GOOD, name="something-else")
    assert one(kb_dir) == "KB301: id 'example-run' must equal the file name 'something-else' (id)"


def test_claim_ids_are_unique(write, kb_dir):
    write(replace(GOOD, "id: snapshot-days", "id: unexpected-interruptions"))
    found = problems(kb_dir)
    assert any(":24:9: KB304: claim id 'unexpected-interruptions' is used twice (first at line 13)" in p for p in found)
    # a formula's input of an id used twice is the first claim of that id, found by position as Report.claim finds it
    report = validate_kb(kb_dir, today=TODAY).loaded.records[0].report
    first = next(i for i, c in enumerate(report.claims) if c.id == "unexpected-interruptions")
    assert report.claim_index()["unexpected-interruptions"] == first
    assert report.claim("unexpected-interruptions") is report.claims[first] and report.claim("nothing") is None


def test_source_ids_are_unique(write, kb_dir):
    text = replace(GOOD, "claims:\n", "  - id: paper\n    title: Again\n    url: https://example.org/2\n"
                   "    kind: secondary\n    checked: 2026-08-02\nclaims:\n")
    write(text)
    assert one(kb_dir) == "KB303: source id 'paper' is used twice (first at line 7) (sources.1.id)"


def test_a_claims_source_must_be_defined(write, kb_dir):
    write(replace(GOOD, "source: paper\n    locator", "source: blog\n    locator"))
    assert one(kb_dir) == "KB305: source 'blog' is not defined in sources (defined: paper) (claims.0.source)"


def test_pattern_and_omission_ids_come_from_the_vocabulary(write, kb_dir):
    text = replace(GOOD, "patterns: [failure-scaling]", "patterns: [failure-scalin]")
    text = replace(text, "topics: [ops-staffing]", "topics: [staffing]")
    text = replace(text, "  ops-staffing: {status", "  ops: {status")
    write(text)
    found = "\n".join(problems(kb_dir))
    assert "unknown pattern 'failure-scalin'" in found and "(claims.0.patterns.0)" in found
    assert "unknown omission 'staffing'" in found and "(claims.0.topics.0)" in found
    assert ":40:3: KB316: unknown omission 'ops'" in found


def test_disclosure_evidence_must_be_claims_of_the_record(write, kb_dir):
    write(replace(GOOD, "claims: [unexpected-interruptions]}", "claims: [no-such-claim]}"))
    assert one(kb_dir) == "KB319: claim 'no-such-claim' is not in this record (disclosures.ops-staffing.claims.0)"


@pytest.mark.parametrize("field, old", [("published", "published: 2024-07-23"), ("checked", "checked: 2026-08-02"),
                                        ("verified", "verified: 2026-08-02")])
def test_dates_are_not_in_the_future(write, kb_dir, field, old):
    write(replace(GOOD, old, f"{field}: 2027-01-01"))
    assert any("2027-01-01 is in the future" in p for p in problems(kb_dir))


def test_checks_are_not_before_publication(write, kb_dir):
    write(replace(GOOD, "verified: 2026-08-02", "verified: 2023-01-01"))
    assert one(kb_dir) == ("KB307: verified 2023-01-01 is before the report was published (2024-07-23) "
                           "(claims.0.verified)")


def test_a_date_must_be_a_date(write, kb_dir):
    write(replace(GOOD, "verified: 2026-08-02", "verified: August 2"))
    assert one(kb_dir) == "KB204: 'August 2' is not a date (write YYYY-MM-DD) (claims.0.verified)"


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "ftp://example.org/x", "example.org"])
def test_only_http_and_https_urls(write, kb_dir, url):
    write(replace(GOOD, "url: https://example.org/report", f"url: '{url}'"))
    assert "URL must be http or https" in one(kb_dir)


def test_a_contradicted_claim_says_what_the_source_says(write, kb_dir):
    write(replace(GOOD, "status: confirmed\n    patterns", "status: contradicted\n    patterns"))
    assert one(kb_dir) == "KB311: a contradicted claim needs a note saying what the source says instead (claims.0.status)"


def test_percentages_stay_within_0_to_100(write, kb_dir):
    write(replace(replace(GOOD, "value: 419", "value: 130"), "unit: interruptions", "unit: percent"))
    found = problems(kb_dir)
    assert any(p.endswith("KB318: 130 percent is impossible: above 100, the most a figure in percent can be "
                          "(claims.0.value)") for p in found)


@pytest.mark.parametrize("value, unit, why", [
    ("-16384", "GPUs", "below 0, the least a figure in GPUs can be"),
    ("-3", "billion tokens", "below 0, the least a figure in tokens can be"),
    ("[-1, 5]", "days", "below 0, the least a figure in days can be"),
    ("1.5", "share", "above 1, the most a figure in share can be"),
])
def test_each_unit_of_the_vocabulary_declares_the_range_its_figures_can_take(write, kb_dir, value, unit, why):
    write(replace(replace(GOOD, "value: 419", f"value: {value}"), "unit: interruptions", f"unit: {unit}"))
    found = [p for p in validate_kb(kb_dir).problems if p.field == "claims.0.value"]
    assert [(p.line, p.message) for p in found] == [(15, f"{value.strip('[]').replace(', ', '–')} {unit} is "
                                                         f"impossible: {why}")]


def test_a_unit_one_letter_off_is_a_likely_typo(write, kb_dir):
    write(replace(GOOD, "unit: interruptions", "unit: interuptions"))
    assert one(kb_dir) == "KB317: unit 'interuptions' looks like a typo of 'interruptions' (claims.0.unit)"


def test_other_units_are_accepted_and_listed_as_not_normalized(write, kb_dir):
    write(replace(GOOD, "unit: interruptions", "unit: percent of 8-grams"))
    result = validate_kb(kb_dir, today=TODAY)
    assert result.errors == []
    assert result.checked.unnormalized_units == {"percent of 8-grams": 1}


def test_known_units_with_scale_words_normalize():
    from kb.load import load_vocabulary
    from kb.units import index
    from conftest import VOCABULARY

    units = index(load_vocabulary(VOCABULARY))
    assert units.normalize("billion tokens").factor == 1e9
    assert units.normalize("million GPU-hours").unit == "GPU-hours"
    assert units.normalize("minutes").base == "seconds" and units.normalize("minutes").factor == 60
    assert units.normalize("interruption").unit == "interruptions"
    assert units.normalize("percent of 8-grams") is None


def test_a_claim_without_source_is_a_warning(write, kb_dir, kb):
    write(replace(GOOD, "    source: paper\n    locator", "    locator"))
    assert problems(kb_dir) == []
    warnings = problems(kb_dir, strict=True)
    assert len(warnings) == 1 and ": warning KB308: no source" in warnings[0]
    assert kb("validate", "--claims", kb_dir).exit_code == 0
    assert kb("validate", "--claims", kb_dir, "--strict").exit_code == 1


@pytest.mark.parametrize("status", ["confirmed", "secondary", "contradicted"])
def test_only_an_unverified_claim_may_lack_a_check_date(write, kb_dir, status):
    note = "\n    note: The source says otherwise." if status == "contradicted" else ""
    write(replace(GOOD, "    verified: 2026-08-02\n    status: confirmed\n    patterns",
                  f"    status: {status}{note}\n    patterns"))
    assert problems(kb_dir) == [f"{kb_dir / 'example-run.yaml'}:20:13: KB309: no check date (verified): a {status} claim needs "
                                f"the day its figure was checked against the source (only an unverified claim may "
                                f"have none) (claims.0.status)"]
    write(replace(GOOD, "    verified: 2026-08-02\n    status: confirmed\n    patterns",
                  "    status: unverified\n    patterns"))
    assert problems(kb_dir, strict=True) == []


# Derived claims: the formula is recomputed and compared with the stated figure.


def test_a_derived_figure_that_does_not_add_up_shows_both_numbers_and_the_formula(write, kb_dir):
    write(replace(GOOD, "value: 3.1", "value: 3.5"))
    assert one(kb_dir) == (
        "KB320: derived figure does not add up: snapshot-days * 24 / unexpected-interruptions = 3.09308, "
        "but the claim states 3.5 (exact, tolerance 0.02) (claims.2.formula)"
    )


def test_the_computed_values_are_kept_for_the_knowledge_base(write, kb_dir):
    write(GOOD)
    check = validate_kb(kb_dir, today=TODAY).checked.derived[("example-run", "hours-between-interruptions")]
    assert check.ok and round(check.computed, 4) == 3.0931
    assert check.inputs == ["example-run/snapshot-days", "example-run/unexpected-interruptions"]


@pytest.mark.parametrize(
    "bound, value, ok",
    [("at-least", "3", True), ("at-least", "3.5", False), ("at-most", "3.5", True), ("at-most", "2.5", False),
     ("about", "3.2", True), ("exact", "[3, 3.2]", True), ("exact", "[3.2, 3.5]", False)],
)
def test_bounds_and_ranges_decide_what_adds_up(write, kb_dir, bound, value, ok):
    text = replace(GOOD, "value: 3.1\n    unit: hours", f"value: {value}\n    bound: {bound}\n    unit: hours")
    write(replace(text, "    tolerance: 0.02\n", ""))
    assert (problems(kb_dir) == []) is ok


def test_a_formula_may_use_another_reports_claims(write, kb_dir):
    write(GOOD)
    other = replace(GOOD, "id: example-run", "id: other-run")
    other = replace(other, "formula: snapshot-days * 24 / unexpected-interruptions",
                    "formula: example-run/snapshot-days * 24 / example-run/unexpected-interruptions")
    write(other, name="other-run")
    assert problems(kb_dir) == []


@pytest.mark.parametrize(
    "formula, says",
    [
        ("snapshot-days * 24 / interruptions", "'interruptions': no claim 'interruptions' in this record"),
        ("nowhere/x * 2", "'nowhere/x': no report 'nowhere' in the knowledge base"),
        ("snapshot-days / (unexpected-interruptions - 419)", "division by zero"),
        ("__import__('os').system('echo hacked')", "unexpected \"__import__"),
        ("exec(snapshot-days)", "unknown function 'exec'"),
        ("snapshot-days *", "expected a number, claim id or '('"),
        ("(snapshot-days", "expected ')'"),
        ("sqrt(0 - snapshot-days)", "sqrt of a negative number"),
        ("10 ** 10 ** 10", "too large"),
        ("hours-between-interruptions + 1", "formula cycle: example-run/hours-between-interruptions → "
                                            "example-run/hours-between-interruptions"),
        ("quote-only * 2", "'quote-only' has no figure"),
    ],
)
def test_formulas_are_parsed_safely_and_fail_clearly(write, kb_dir, formula, says):
    text = replace(GOOD, "formula: snapshot-days * 24 / unexpected-interruptions", f'formula: "{formula}"')
    text = replace(text, "disclosures:", "  - id: quote-only\n    statement: A claim without a figure.\n"
                   "    source: paper\n    verified: 2026-08-02\n    status: confirmed\ndisclosures:")
    write(text)
    found = one(kb_dir)
    assert says in found, found
    assert found.endswith("(claims.2.formula)")


def test_a_cycle_across_claims_is_reported_on_each(write, kb_dir):
    text = replace(GOOD, "formula: snapshot-days * 24 / unexpected-interruptions", "formula: loop-b * 1")
    text = replace(text, "disclosures:", "  - id: loop-b\n    statement: The other half of a loop.\n    value: 3.1\n"
                   "    status: derived\n    formula: hours-between-interruptions * 1\ndisclosures:")
    write(text)
    found = problems(kb_dir)
    assert len(found) == 2
    assert all("formula cycle" in p for p in found)


def test_a_derived_claim_needs_a_formula_and_only_derived_claims_have_one(write, kb_dir):
    text = replace(GOOD, "    formula: snapshot-days * 24 / unexpected-interruptions\n", "")
    text = replace(text, "status: confirmed\n    patterns", "status: confirmed\n    formula: 1 + 1\n    patterns")
    write(text)
    found = "\n".join(problems(kb_dir))
    assert "KB312: a derived claim needs a formula (claims.2.formula)" in found
    assert "KB314: a formula is only for derived claims (status is 'confirmed') (claims.0.formula)" in found


def test_a_quote_that_is_a_table_row_must_say_so(write, kb_dir):
    """DeepSeek-V3's KV-cache figures were once quoted as table rows rewritten as Markdown, read as sentences."""
    row = "quote: 'DeepSeek-V3 (MLA) | 61 | 70.272 KB'"
    write(replace(GOOD, "quote: The remaining 419 were unexpected interruptions", row))
    assert problems(kb_dir, strict=True) == [
        f"{kb_dir / 'example-run.yaml'}:19:12: warning KB326: this quote is a table row: mark it quote_kind: table "
        "(and name the table in the locator), so a reader knows the words are cells, not a sentence (claims.0.quote)"]
    write(replace(GOOD, "quote: The remaining 419 were unexpected interruptions", row + "\n    quote_kind: table"))
    assert problems(kb_dir, strict=True) == []


def test_a_confirmed_figure_needs_the_sources_words_or_why_there_are_none(write, kb_dir, kb):
    write(replace(GOOD, "    quote: The remaining 419 were unexpected interruptions\n", ""))
    assert problems(kb_dir) == []  # a warning: an error only with --strict, which CI runs
    (warning,) = problems(kb_dir, strict=True)
    assert ": warning KB310: a confirmed claim needs the source's words (quote)" in warning
    assert kb("validate", "--claims", kb_dir, "--strict").exit_code == 1
    write(replace(GOOD, "    quote: The remaining 419 were unexpected interruptions\n",
                  "    no_quote: read from Figure 3, a chart\n"))
    assert problems(kb_dir, strict=True) == []


# A source's version, the day its text was read and the digest of that text (record format v1 additions).

SHA = "ab" * 32


def with_source(url: str, extra: str = "") -> str:
    return replace(replace(GOOD, "url: https://example.org/report", f"url: {url}"),
                   "    checked: 2026-08-02\nclaims:", f"{extra}    checked: 2026-08-02\nclaims:")


def test_a_source_may_say_which_version_it_read_when_and_the_digest_of_its_text(write, kb_dir):
    write(with_source("https://arxiv.org/abs/2407.21783v3",
                      f"    version: v3\n    retrieved: 2026-08-01\n    sha256: {SHA}\n"))
    assert problems(kb_dir, strict=True) == []


def test_an_arxiv_url_with_a_version_and_a_different_version_field_is_an_error(write, kb_dir):
    write(with_source("https://arxiv.org/abs/2407.21783v3", "    version: v2\n"))
    assert one(kb_dir) == ("KB325: version 'v2' differs from the version the URL points at (v3): give the version "
                           "read in both (sources.0.version)")


def test_an_arxiv_version_is_written_vn(write, kb_dir):
    write(with_source("https://arxiv.org/abs/2407.21783", "    version: '3'\n"))
    assert one(kb_dir).startswith("KB327: an arXiv source's version is written vN")


def test_a_github_link_to_one_commit_and_a_version_naming_another_is_an_error(write, kb_dir):
    url = "https://github.com/example/repo/blob/359f0e65db0d5dacbce3e60c50951b904b3d5243/README.md"
    write(with_source(url, "    version: 359f0e6\n"))
    assert problems(kb_dir) == []  # the same commit, abbreviated
    write(with_source(url, "    version: aaaaaaa\n"))
    assert one(kb_dir).startswith("KB325: version 'aaaaaaa' is another commit than the one the URL points at")


def test_a_text_digest_needs_the_day_the_text_was_read(write, kb_dir):
    write(with_source("https://example.org/report", f"    sha256: {SHA}\n"))
    assert one(kb_dir) == ("KB327: a sha256 says which text was read: give the day it was read too (retrieved) "
                           "(sources.0.sha256)")


@pytest.mark.parametrize("extra, expected", [
    ("    retrieved: 2027-01-01\n", "KB306: retrieved 2027-01-01 is in the future"),
    ("    retrieved: 2020-01-01\n", "KB307: retrieved 2020-01-01 is before the report was published"),
    ("    sha256: ABC\n", "KB299: String should match pattern"),
])
def test_the_form_of_retrieved_and_sha256_is_checked(write, kb_dir, extra, expected):
    write(with_source("https://example.org/report", extra))
    assert any(expected in p for p in problems(kb_dir)), problems(kb_dir)
