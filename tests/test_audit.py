"""`audit`: graded verdicts on the five omissions, with evidence, findings and the knowledge base as context."""

from __future__ import annotations

import json
import shutil
import textwrap
from datetime import date

import pytest
import yaml
from click.testing import CliRunner

from auditor.audit import Auditor, InputError, audit_paths
from auditor.cli import audit
from conftest import CLAIMS, GOOD, VOCABULARY, replace
from kb.pipeline import validate_files, validate_kb

def run(*args):
    """`audit` with the fixture knowledge base to compare with (and its database, when one is built)."""
    return CliRunner().invoke(audit, ["--claims", str(CLAIMS), *map(str, args)], catch_exceptions=False)


@pytest.fixture(scope="module")
def cases():
    result = validate_kb(CLAIMS)
    auditor = Auditor(result.vocabulary)
    return {rec.report.id: (rec.report, auditor.record(rec.report))
            for rec in result.loaded.records if rec.report.disclosures}


def test_a_verdict_carries_its_evidence_and_the_questions_left_open(cases):
    _, llama = cases["llama-3-405b"]
    contamination = llama["contamination"]
    assert contamination.status == "disclosed"
    assert contamination.rule == "disclosed: method and threshold and overlap given"
    assert {p["part"] for e in contamination.evidence for p in e.parts} >= {"method", "threshold", "overlap"}
    assert all(e.claim.startswith("llama-3-405b/") for e in contamination.evidence)
    _, deepseek = cases["deepseek-v3"]
    absent = deepseek["ops-staffing"]  # an absent verdict names no evidence and asks every part's question
    assert absent.status == "absent" and absent.evidence == [] and absent.rule == "absent: nothing on it"
    assert [m["part"] for m in absent.missing] == ["tooling", "stability", "people"]
    assert absent.missing[0]["question"].startswith("Which tools detected failures")
    partial = llama["failed-runs"]  # a divergence named, its compute not: the question left is the compute
    assert partial.status == "partial" and [m["part"] for m in partial.missing] == ["compute"]


def test_a_derived_claim_gives_only_what_follows_directly_from_the_report(cases):
    # a derived claim is the knowledge base's arithmetic: evidence only of a part the rubric lets follow directly
    # from the report's figures (days on a stated number of GPUs are the cost of a failed run)
    derived = {f"{report.id}/{c.id}" for report, _ in cases.values() for c in report.claims if c.status == "derived"}
    cited = [(o, p["part"]) for _, verdicts in cases.values() for o, v in verdicts.items() for e in v.evidence
             if e.claim in derived for p in e.parts]
    assert derived and set(cited) == {("failed-runs", "compute")}
    _, smollm3 = cases["smollm3"]
    assert smollm3["failed-runs"].evidence[0].claim == "smollm3/restart-gpu-hours"


# Text input.

REPORT_TEXT = textwrap.dedent("""\
    # The Example-7B Technical Report

    We trained Example-7B on 2T tokens drawn from Common Crawl and code.

    ## Evaluation

    We decontaminated all benchmarks against the pretraining data using 13-gram overlap, removing any example
    with 13-gram overlap of 10% or more; 2.3% of MMLU examples were contaminated and we report scores on the
    clean subset.

    Our training used 1,024 GPUs. We did not perform any hyperparameter search beyond the defaults.

    The model uses rotary embeddings (Su et al., 2021) as described in Section 3.2.
    """)


def test_a_report_text_gets_verdicts_from_its_sentences(tmp_path):
    path = tmp_path / "example-7b.md"
    path.write_text(REPORT_TEXT)
    (result,) = audit_paths([path], claims_dir=CLAIMS)
    assert result.title == "The Example-7B Technical Report" and result.input == "text"
    v = result.verdicts
    assert v["contamination"].status == "disclosed"
    assert set(v["contamination"].given) == {"method", "threshold", "overlap"}
    assert v["contamination"].evidence[0].line == 7
    assert v["hp-search"].status == "absent"  # "did not perform any hyperparameter search": negated
    assert v["ops-staffing"].status == "absent"
    assert v["data-filtering"].status == "partial"


def test_a_pdf_report_is_read_with_the_pdf_extra(tmp_path):
    path = tmp_path / "tiny.pdf"
    path.write_bytes(_tiny_pdf("We decontaminated the benchmarks with 13-gram overlap: 2.3% of MMLU was removed."))
    (result,) = audit_paths([path], claims_dir=CLAIMS)
    assert result.verdicts["contamination"].status == "disclosed"


def _tiny_pdf(text: str) -> bytes:
    """A one-page PDF with one line of text, written by hand (no PDF writer is a dependency)."""
    stream = f"BT /F1 10 Tf 20 100 Td ({text}) Tj ET".encode()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 200] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_a_text_without_words_is_an_input_error_not_five_absent_verdicts(tmp_path):
    # "absent" says the report was read and says nothing: an empty file or a PDF of page images says nothing read
    (tmp_path / "empty.md").write_text("\n \n")
    (tmp_path / "scanned.pdf").write_bytes(_tiny_pdf(""))
    (tmp_path / "short.md").write_text("# A title\n")
    empty, scanned, short = audit_paths([tmp_path / n for n in ("empty.md", "scanned.pdf", "short.md")])
    assert isinstance(empty, InputError) and str(empty).endswith("empty.md: no words to read")
    assert isinstance(scanned, InputError) and "no text layer: run OCR on it first" in str(scanned)
    assert short.verdicts["failed-runs"].status == "absent"  # a title is a text, if a short one
    result = CliRunner().invoke(audit, [str(tmp_path / "empty.md")])
    assert result.exit_code == 2 and "empty.md: no words to read" in result.output


# Records: hygiene findings, declarations, context.


@pytest.fixture
def record(tmp_path):
    def _write(text: str, name: str = "example-run"):
        p = tmp_path / f"{name}.yaml"
        p.write_text(text)
        return p

    return _write


def findings_of(result, kind):
    return [f for f in result.findings if f.kind == kind]


def test_hygiene_findings_name_the_claim_and_line(record):
    text = replace(GOOD, "    source: paper\n    locator", "    locator")  # no source
    text = replace(text, "verified: 2026-08-02\n    status: confirmed\n  - id: hours",
                   "verified: 2024-08-02\n    status: secondary\n  - id: hours")  # stale and secondary
    text = replace(text, "value: 3.1\n", "value: 3.5\n")  # derived figure that does not add up
    text = replace(text, "disclosures:", "  - id: disputed\n    statement: A figure the source denies.\n"
                   "    source: paper\n    verified: 2026-08-02\n    status: contradicted\n"
                   "    note: The source says 12.\n  - id: hearsay\n    statement: Said, not shown.\n"
                   "    source: paper\n    verified: 2026-08-02\n    status: unverified\ndisclosures:")
    (result,) = audit_paths([record(text)], claims_dir=CLAIMS, today=date(2026, 11, 29))
    kinds = {(f.kind, f.claim) for f in result.findings}
    assert ("no-source", "example-run/unexpected-interruptions") in kinds
    assert ("stale", "example-run/snapshot-days") in kinds
    assert ("secondary-only", "example-run/snapshot-days") in kinds
    assert ("derived-mismatch", "example-run/hours-between-interruptions") in kinds
    assert ("contradicted", "example-run/disputed") in kinds
    assert ("unverified", "example-run/hearsay") in kinds
    (stale,) = findings_of(result, "stale")
    assert stale.line == 23 and "checked 849 days ago (limit 365)" in stale.message


def test_a_declaration_the_evidence_does_not_support_is_flagged(record):
    text = replace(GOOD, "  ops-staffing: {status: partial", "  contamination: {status: disclosed, note: Trust us.}\n"
                   "  ops-staffing: {status: partial")
    (result,) = audit_paths([record(text)], claims_dir=CLAIMS)
    (f,) = findings_of(result, "declared-unsupported")
    assert f.omission == "contamination" and f.line == 40
    assert f.message.startswith("declared disclosed, but the evidence supports absent (missing: method")


def test_evidence_a_declaration_ignores_is_flagged(record):
    text = replace(GOOD, "  ops-staffing: {status: partial, note: Interruption statistics but no staffing., "
                   "claims: [unexpected-interruptions]}", "  ops-staffing: {status: absent, note: Nothing.}")
    (result,) = audit_paths([record(text)], claims_dir=CLAIMS)
    (f,) = findings_of(result, "evidence-ignored")
    assert f.message.startswith("declared absent, but the claims give partial evidence: ")
    assert "example-run/unexpected-interruptions" in f.message


def test_each_verdict_is_compared_with_the_knowledge_base(record, cases):
    (result,) = audit_paths([record(GOOD)], claims_dir=CLAIMS)
    cohort = result.verdicts["failed-runs"].cohort
    assert cohort["of"] == 8 and cohort["text"] == f"absent in {cohort['same']} of 8"
    declared_absent = [r for r, _ in cases.values() if r.disclosures["failed-runs"].status == "absent"]
    assert cohort["same"] == len(declared_absent) >= 1  # Llama 3 leaves failed runs out too


def test_a_report_like_one_already_there_is_warned_about(record):
    llama = (CLAIMS / "llama-3-405b.yaml").read_text().replace("id: llama-3-405b", "id: llama-3-again", 1)
    (result,) = audit_paths([record(llama, "llama-3-again")], claims_dir=CLAIMS)
    (similar,) = [s for s in result.similar if s["report"] == "llama-3-405b"]
    assert similar["why"] == "title 100% alike, same organization, shared models: llama 3 405b"
    assert any(f.kind == "similar-report" and "llama-3-405b" in f.message for f in result.findings)


def test_a_record_in_the_knowledge_base_is_not_its_own_near_duplicate():
    (result,) = audit_paths([CLAIMS / "llama-3-405b.yaml"], claims_dir=CLAIMS)
    assert result.similar == []


# The command: formats and exit codes.


def test_text_output_without_colour_when_not_a_terminal():
    r = run(CLAIMS / "llama-3-405b.yaml")
    assert r.exit_code == 0
    assert "\x1b[" not in r.stdout
    assert "✔ disclosed contamination" in r.stdout
    assert "rule: disclosed: method and threshold and overlap given" in r.stdout
    assert "missing compute: How much compute" in r.stdout


def test_json_output_has_a_stable_documented_shape(record):
    r = run("--format", "json", CLAIMS / "opt-175b.yaml")
    data = json.loads(r.stdout)
    assert data["version"] == 1 and data["errors"] == []
    (rep,) = data["reports"]
    assert set(rep) == {"file", "input", "report", "title", "omissions", "findings", "similar"}
    assert list(rep["omissions"]) == ["failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"]
    om = rep["omissions"]["hp-search"]
    assert set(om) == {"status", "rule", "declared", "given", "mentioned", "missing", "evidence", "cohort"}
    assert om["declared"] == "disclosed" and om["status"] in ("disclosed", "partial", "absent")
    assert {"part", "cue", "score", "figure", "claim", "line", "parts"} <= set(om["evidence"][0])
    assert {"part", "cue", "given"} <= set(om["evidence"][0]["parts"][0])


def test_markdown_output_for_a_pull_request_comment():
    r = run("--format", "markdown", CLAIMS / "bloom.yaml")
    assert "### Audit: BLOOM: A 176B-Parameter Open-Access Multilingual Language Model" in r.stdout
    assert "| Omission | Verdict | Declared | Knowledge base | Missing |" in r.stdout
    assert "| contamination | ✘ absent | absent |" in r.stdout


def test_fail_on_sets_the_exit_code():
    assert run("--fail-on", "absent", CLAIMS / "olmo.yaml").exit_code == 0  # nothing absent
    assert run("--fail-on", "partial", CLAIMS / "olmo.yaml").exit_code == 1
    assert run("--fail-on", "absent", CLAIMS / "deepseek-v3.yaml").exit_code == 1


def test_unreadable_and_invalid_inputs_exit_2_and_the_others_still_run(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# T\n\xff\xfe broken")
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(replace(GOOD, "status: confirmed", "status: confirmd"))
    r = run(bad, invalid, tmp_path / "missing.txt", CLAIMS / "olmo.yaml")
    assert r.exit_code == 2
    assert f"error: {bad}:2: not valid UTF-8 (byte 0xff)" in r.stdout
    assert f"{invalid}:21:13: KB203: 'confirmd' is not one of" in r.stdout
    assert f"error: {tmp_path / 'missing.txt'}: no such file" in r.stdout
    assert f"{CLAIMS / 'olmo.yaml'}: OLMo 2 and Olmo 3" in r.stdout
    assert "Traceback" not in r.stdout


def test_a_knowledge_base_whose_vocabulary_is_not_valid_exits_2_naming_its_line(tmp_path):
    claims = tmp_path / "claims"
    shutil.copytree(CLAIMS, claims)
    (claims / "_vocabulary.yaml").write_text(VOCABULARY.read_text().replace("evidence: given-first", "evidence: often"))
    r = run("--claims", claims, claims / "olmo.yaml")
    assert r.exit_code == 2
    assert "_vocabulary.yaml:" in r.stderr and "KB203: 'often' is not one of 'all' or 'given-first'" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_help_documents_the_exit_codes():
    r = run("--help")
    assert "Exit status: 0 it ran; 1 with --fail-on" in " ".join(r.stdout.split())


# The vocabulary is data.


def test_a_sixth_omission_needs_no_code_change(tmp_path):
    vocab = yaml.safe_load(VOCABULARY.read_text())
    vocab["omissions"].append({
        "id": "eval-seeds",
        "title": "Evaluation seeds and variance",
        "description": "How many seeds each evaluation used, and the spread of the scores.",
        "anchors": ["seed", "variance", "standard deviation"],
        "parts": [
            {"id": "seeds", "description": "number of seeds", "question": "How many seeds did each evaluation use?",
             "cues": ["random seeds", "seeds"]},
            {"id": "spread", "description": "spread of scores", "question": "How much did scores vary across seeds?",
             "cues": ["standard deviation", "variance across seeds"]},
        ],
    })
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "_vocabulary.yaml").write_text(yaml.safe_dump(vocab, sort_keys=False))
    shutil.copy(CLAIMS / "olmo.yaml", claims)
    text = tmp_path / "seeded.md"
    text.write_text("# Seeded\n\nEvery benchmark was run with 5 random seeds; the standard deviation was 0.4 points.\n")
    r = run("--claims", claims, "--format", "json", text, claims / "olmo.yaml")
    assert r.exit_code == 0, r.stdout
    reports = json.loads(r.stdout)["reports"]
    assert reports[0]["omissions"]["eval-seeds"]["status"] == "disclosed"
    assert reports[1]["omissions"]["eval-seeds"]["status"] == "absent"
    assert len(reports[1]["omissions"]) == 6


def test_kb_build_stores_the_auditors_verdicts_next_to_the_declared_ones(tmp_path, cases):
    import sqlite_utils

    from kb.store import build

    build(CLAIMS, tmp_path / "kb.db")
    db = sqlite_utils.Database(tmp_path / "kb.db")
    report, audited = cases["opt-175b"]
    row = db["verdicts"].get(("opt-175b", "hp-search", "audit"))
    assert (row["declared"], row["audited"], row["provider"]) == ("disclosed", audited["hp-search"].status, "audit")
    assert row["agree"] == int(row["declared"] == row["audited"])
    assert db["verdicts"].count == 9 * 5
    disagreements = sum(r.disclosures[o].status != v[o].status for r, v in cases.values() for o in r.disclosures)
    assert db.execute("select count(*) from verdicts where agree = 0").fetchone()[0] == disagreements


def test_what_a_build_stores_of_a_verdict_is_what_the_full_verdict_says(tmp_path):
    """kb_verdicts asks the auditor only for what a build stores (Auditor.stored, without the evidence's details):
    the same status, evidence claims and missing parts as the full verdicts, on every record of the fixtures, of
    claims/ and of generated reports of both styles."""
    from auditor.audit import Auditor
    from benchmarks.generate import generate
    from conftest import REAL_CLAIMS, TODAY

    folders = [CLAIMS, REAL_CLAIMS]
    for style in ("project", "long"):
        generate(tmp_path / style, reports=6, claims=60, seed=11, today=TODAY, style=style)
        folders.append(tmp_path / style)
    for folder in folders:
        v = validate_kb(folder, today=TODAY)
        auditor = Auditor(v.vocabulary)
        for rec in v.loaded.records:
            full = [(o, x.status, [e.claim for e in x.evidence if e.claim], x.missing)
                    for o, x in auditor.record(rec.report).items()]
            assert list(auditor.stored(rec.report)) == full, rec.report.id


def test_the_verdicts_a_build_stores_are_the_same_report_by_report_as_all_at_once():
    """kb build asks for one report's verdicts at a time (on two cores); the auditor keeps one rulebook per
    vocabulary for it, and the answer is the one given for every report together."""
    from dataclasses import replace as replace_field

    from auditor.audit import _auditor_for, kb_verdicts

    v = validate_kb(CLAIMS)
    together = kb_verdicts(v)
    one_by_one = [row for rec in v.loaded.records
                  for row in kb_verdicts(replace_field(v, loaded=replace_field(v.loaded, records=[rec])))]
    assert one_by_one == together and len(together) == 5 * len(v.loaded.records)
    assert _auditor_for(v.vocabulary) is _auditor_for(v.vocabulary)
    other = v.vocabulary.model_copy()
    assert _auditor_for(other) is not _auditor_for(v.vocabulary)
