"""The contributor's path: kb new, the JSON Schema, kb fmt, near-duplicate warnings, pre-commit and CI files,
and the whole path end to end in a temporary copy of the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import CLAIMS, GOOD, ROOT, replace
from kb.fmt import format_text
from kb.load import load_file, record_files
from kb.model import record_json_schema

OMISSIONS = ["failed-runs", "data-filtering", "hp-search", "ops-staffing", "contamination"]


# The JSON Schema for editors.


def test_the_committed_schema_is_what_the_models_generate(kb):
    committed = json.loads((ROOT / "schema" / "record-v1.schema.json").read_text())
    assert committed == record_json_schema(), "run: kb schema -o schema/record-v1.schema.json"
    assert json.loads(kb("schema").stdout) == committed


def test_the_schema_rejects_what_the_validator_rejects():
    import jsonschema

    schema = record_json_schema()
    record = yaml.safe_load(GOOD)  # PyYAML types dates; the schema wants the text an editor sees
    record["published"] = "2024-07-23"
    for s in record["sources"]:
        s["checked"] = "2026-08-02"
    for c in record["claims"]:
        if "verified" in c:
            c["verified"] = "2026-08-02"
    jsonschema.validate(record, schema)
    bad = json.loads(json.dumps(record))
    bad["claims"][0]["sorce"] = "paper"
    with pytest.raises(jsonschema.ValidationError, match="sorce"):
        jsonschema.validate(bad, schema)
    bad = json.loads(json.dumps(record))
    bad["claims"][0]["status"] = "confirmd"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_every_record_carries_the_editor_modeline_and_vscode_maps_the_schema():
    for f in record_files(CLAIMS):
        assert f.read_text().startswith("# yaml-language-server: $schema=../schema/record-v1.schema.json\n"), f
    settings = json.loads((ROOT / ".vscode" / "settings.json").read_text())
    assert "claims/*.yaml" in settings["yaml.schemas"]["./schema/record-v1.schema.json"]


# kb new.


def test_kb_new_writes_a_record_from_the_template_and_refuses_an_existing_id(kb, kb_dir):
    r = kb("new", "gemma-2", "--claims", kb_dir, "--title", "Gemma 2: Open Models", "--organization", "Google",
           "--url", "https://arxiv.org/abs/2408.00118")
    assert r.exit_code == 0, r.output
    path = kb_dir / "gemma-2.yaml"
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=")
    data = yaml.safe_load(text)
    assert (data["id"], data["title"], data["organization"]) == ("gemma-2", "Gemma 2: Open Models", "Google")
    assert data["sources"][0]["url"] == "https://arxiv.org/abs/2408.00118"
    assert kb("fmt", "--check", "--claims", kb_dir).exit_code == 0
    # the placeholders left are errors until replaced
    assert kb("validate", "--claims", kb_dir, "--strict").exit_code == 1
    again = kb("new", "gemma-2", "--claims", kb_dir)
    assert again.exit_code == 1 and "exists already" in again.stderr
    assert kb("new", "Gemma_2", "--claims", kb_dir).exit_code == 1


def test_a_record_from_the_template_left_unedited_is_refused_at_every_placeholder(kb, kb_dir):
    assert kb("new", "some-model", "--claims", kb_dir).exit_code == 0
    path = kb_dir / "some-model.yaml"
    lines = path.read_text().splitlines()
    r = kb("validate", "--claims", kb_dir, "--strict", "--format", "json")
    assert r.exit_code == 1
    found = json.loads(r.stdout)["problems"]
    placeholders = [n for n, line in enumerate(lines, 1) if re.search(r": <[^>]+>|^\s*- <|\[<", line)]
    assert len(placeholders) >= 25  # title, organization, dates, URL, statements, figures, quotes, ...
    flagged = {p["line"] for p in found if "is a placeholder from the template" in p["message"]}
    assert flagged == set(placeholders)
    assert [p for p in found if "placeholder" not in p["message"]] == []  # nothing said twice
    assert kb("build", "--claims", kb_dir, "--db", kb_dir.parent / "kb.db").exit_code == 1


def test_once_every_placeholder_is_replaced_the_template_record_validates(kb, kb_dir):
    kb("new", "some-model", "--claims", kb_dir, "--title", "Some Model", "--organization", "Some Lab",
       "--url", "https://example.org/some-model")
    path = kb_dir / "some-model.yaml"
    path.write_text(fill_in(path.read_text()))
    r = kb("validate", "--claims", kb_dir, "--strict")
    assert r.exit_code == 0, r.output


def fill_in(text: str, figures=("1024", "30", "737K")) -> str:
    """A record from the template with every <placeholder> replaced, as a contributor would (the figures: GPUs,
    days, and the GPU-hours the template's formula gives)."""
    filled = {"published": "2025-01-31", "retrieved": "2025-02-01", "checked": "2025-02-01",
              "verified": "2025-02-01", "version": "v1", "status": "absent"}
    figures = iter(figures)

    def fill(m):
        key = m.group(2)
        value = next(figures) if key == "value" else filled.get(key, "Filled in.")
        return f"{m.group(1)}{key}: {value}"

    text = re.sub(r"(?m)^(\s*(?:- )?)(\w+): <[^>]+>", fill, text)
    return re.sub(r"(?m)^(\s*- )<[^>]+>$", r"\1Filled in.", text.replace("[<model name and size>]", "[Some 7B]"))


# kb fmt.

SCRAMBLED = """\
# A comment at the top stays at the top.
title: An Example Training Report
id: example-run
published: 2024-07-23
organization: Example Lab
claims:
  # This comment belongs to the first claim.
  - statement: 419 unexpected interruptions.   
    status: confirmed
    id: unexpected-interruptions
    value: 419
    unit: interruptions
    source: paper
    verified: 2026-08-02

  - id: hours
    statement: One every 3.1 hours.
    formula: snapshot * 24 / unexpected-interruptions   # recomputed on every build
    value: '3.10'
    status: derived
    tolerance: 0.02
  - id: snapshot
    statement: 54 days.
    locator: no
    value: 54
    unit: days
    status: confirmed
    source: paper
    verified: 2026-08-02
sources:
  - title: An Example Training Report
    id: paper
    url: https://example.org/report
    checked: 2026-08-02
    kind: primary
disclosures:
  contamination: {status: absent}
  failed-runs:
    note: none
    status: absent
"""


def test_fmt_orders_keys_and_keeps_values_and_comments(tmp_path):
    out = format_text(SCRAMBLED, OMISSIONS)
    assert out.splitlines()[:5] == [
        "# yaml-language-server: $schema=../schema/record-v1.schema.json",
        "# A comment at the top stays at the top.", "id: example-run", "title: An Example Training Report",
        "organization: Example Lab"]
    assert "  # This comment belongs to the first claim.\n  - id: unexpected-interruptions\n    statement:" in out
    assert "    status: derived\n    formula: snapshot * 24 / unexpected-interruptions   # recomputed" in out
    assert out.index("failed-runs:") < out.index("contamination: {status: absent}")
    assert " \n" not in out  # no trailing spaces
    assert format_text(out, OMISSIONS) == out  # idempotent
    # Nothing is lost: the formatted file loads to the same record as the original.
    before, after = tmp_path / "a" / "example-run.yaml", tmp_path / "b" / "example-run.yaml"
    for p, text in ((before, SCRAMBLED), (after, out)):
        p.parent.mkdir()
        p.write_text(text)
    a, b = load_file(before).records[0].report, load_file(after).records[0].report
    assert a.model_dump() == b.model_dump()
    assert b.claim("hours").value_text == "3.10" and b.claim("snapshot").locator == "no"
    comments = [l.strip() for l in SCRAMBLED.splitlines() if "#" in l]
    assert all(c.split("#", 1)[1] in out for c in comments)


def test_fmt_keeps_every_record_of_the_knowledge_base_as_loaded(tmp_path):
    for f in record_files(CLAIMS):
        copy = tmp_path / f.name
        copy.write_text(format_text(f.read_text(), OMISSIONS))
        assert load_file(copy).records[0].report.model_dump() == load_file(f).records[0].report.model_dump(), f


def test_fmt_check_lists_unformatted_files_and_fmt_fixes_them(kb, kb_dir):
    (kb_dir / "example-run.yaml").write_text(SCRAMBLED)
    r = kb("fmt", "--check", "--claims", kb_dir)
    assert r.exit_code == 1 and "example-run.yaml: not formatted" in r.stdout
    assert kb("fmt", "--claims", kb_dir).exit_code == 0
    assert kb("fmt", "--check", "--claims", kb_dir).exit_code == 0


def test_the_knowledge_base_is_formatted(kb):
    r = kb("fmt", "--check")
    assert r.exit_code == 0, r.stdout


def test_fmt_reports_a_broken_file_with_its_line(kb, kb_dir):
    (kb_dir / "broken.yaml").write_text("id: x\ntitle: [unclosed\n")
    r = kb("fmt", "--claims", kb_dir)
    assert r.exit_code == 1 and f"{kb_dir / 'broken.yaml'}:3:1:" in r.stderr


# Near-duplicates.


def test_a_report_like_an_existing_one_is_warned_about_naming_the_other_file(kb, tmp_path):
    d = tmp_path / "claims"
    shutil.copytree(CLAIMS, d)
    llama = (d / "llama-3-405b.yaml").read_text().replace("id: llama-3-405b", "id: llama-3-herd", 1)
    (d / "llama-3-herd.yaml").write_text(llama)
    r = kb("validate", "--claims", d, d / "llama-3-herd.yaml")
    assert r.exit_code == 0  # a warning, not an error
    assert f"{d / 'llama-3-herd.yaml'}:3:8: warning KB323: looks like llama-3-405b ({d / 'llama-3-405b.yaml'}:3): " \
           "title 100% alike, same organization, shared models: llama 3 405b (title)" in r.stdout
    assert kb("validate", "--claims", d, "--strict", d / "llama-3-herd.yaml").exit_code == 1


def test_the_first_question_about_alike_reports_has_the_answers_of_the_index():
    """kb.duplicates.Index answers its first question by searching the reports' texts and later ones from an index
    of their words: the same reports either way (words inside other words, short words, words too common to
    narrow the search, models, organisations, letters that lowercase to ASCII)."""
    import random

    from kb.duplicates import Index, Summary

    rnd = random.Random(15)
    words = ["Llama", "llamas", "SuperLlama", "llama-3", "Model", "DeepSeek", "v3", "K2", "ab", "abc", "\u212aimi", "Kimi", "the",
             "OPT-175B", "175b", "13B", "MoE", "fine\ntuned", "Meta", "meta-ai", "\u0130nstruct", "instruct"]

    def report(i):
        def some(n):
            return [rnd.choice(words) for _ in range(rnd.randint(0, n))]
        return Summary(f"r{i}", " ".join(some(6)), " ".join(some(2)), tuple(some(2)))

    found = 0
    for _ in range(300):
        reports = [report(i) for i in range(rnd.randint(0, 120))]
        q = report(-1)
        index = Index(reports)
        index.alike("a first question", "", ())  # the next question is answered from the index
        by_index = index.alike(q.title, q.organization, q.models)
        by_search = Index(reports).alike(q.title, q.organization, q.models)
        assert [(m.other.id, m.score, m.why) for m in by_search] == [(m.other.id, m.score, m.why) for m in by_index]
        found += len(by_index)
    assert found > 100  # not a comparison of empty answers


def test_a_claim_repeating_another_of_the_same_report_is_warned_about(kb, write, kb_dir):
    write(replace(GOOD, "disclosures:", "  - id: interruptions-again\n    statement: 419 unexpected interruptions "
                  "in a 54-day snapshot!\n    value: 419\n    unit: interruptions\n    source: paper\n"
                  "    verified: 2026-08-02\n    status: confirmed\ndisclosures:"))
    r = kb("validate", "--claims", kb_dir)
    assert "warning KB324: claim 'interruptions-again' repeats claim 'unexpected-interruptions' (line 13)" in r.stdout


# pre-commit and CI.


def test_pre_commit_hooks_run_validate_and_fmt_on_records():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["kb-validate"]["entry"] == "kb validate --strict" and hooks["kb-fmt"]["entry"] == "kb fmt --check"
    local = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert {h["id"] for h in local} >= {"kb-validate", "kb-fmt"}


def test_the_workflow_validates_tests_builds_and_audits_changed_records():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "records.yml").read_text())
    steps = " ".join(s.get("run", "") for s in wf["jobs"]["check"]["steps"])
    for command in ("kb validate --strict", "kb fmt --check", "kb build", "audit --format markdown",
                    "GITHUB_STEP_SUMMARY", "make test"):
        assert command in steps
    # the build before the tests keeps the auditor's verdicts in .cache/verdicts, which CI keeps between runs
    kept = [s["with"]["path"] for s in wf["jobs"]["check"]["steps"] if s.get("uses", "").startswith("actions/cache")]
    assert kept == [".cache/verdicts"]
    template = (ROOT / ".github" / "pull_request_template.md").read_text()
    assert "verbatim" in template and "Derived formulas check" in template
    assert {p.name for p in (ROOT / ".github" / "ISSUE_TEMPLATE").iterdir()} == {"add-a-report.md",
                                                                                   "a-figure-is-wrong.md"}


def test_a_weekly_workflow_reverifies_and_keeps_one_issue_listing_the_drift():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "reverify.yml").read_text())
    triggers = wf[True]  # YAML 1.1 reads the key `on` as true
    assert [s["cron"] for s in triggers["schedule"]] == ["17 5 * * 1"] and "workflow_dispatch" in triggers
    assert wf["permissions"] == {"contents": "read", "issues": "write"}
    steps = wf["jobs"]["reverify"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "kb reverify --format markdown > drift.md" in runs and "GITHUB_STEP_SUMMARY" in runs
    # one issue: found by its label, edited when open, created otherwise, closed when every quote is found again
    assert "gh issue list --state open --label source-drift" in runs
    assert "gh issue edit" in runs and "gh issue create" in runs and "gh issue close" in runs
    assert any(s.get("uses", "").startswith("actions/cache@") and s["with"]["path"] == ".cache/sources" for s in steps)
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert ".github/workflows/reverify.yml" in contributing and "source-drift" in contributing


# End to end, as a newcomer following CONTRIBUTING.md, in a temporary copy of the repository.


def test_the_contributor_path_end_to_end(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".venv", ".git", "*.db", "inspect-data.json",
                                                              "__pycache__", ".pytest_cache"))
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "GITHUB_ACTIONS": "false"}

    def run(*cmd):
        tool = str(bin_dir / cmd[0])
        return subprocess.run([tool, *cmd[1:]], cwd=repo, capture_output=True, text=True, env=env, timeout=120)

    r = run("kb", "new", "tiny-model", "--title", "Tiny Model Technical Report", "--organization", "Tiny Lab",
            "--url", "https://example.org/tiny")
    assert r.returncode == 0, r.stderr
    path = repo / "claims" / "tiny-model.yaml"
    # Fill in the fields, planting two mistakes: a misspelt status and a figure with separators.
    text = fill_in(path.read_text(), figures=("1,024", "30", "737K"))
    text = text.replace("status: confirmed               #", "status: confirmd                #", 1)
    path.write_text(text)
    r = run("kb", "validate", "--strict", "claims/tiny-model.yaml")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert any(l.startswith("claims/tiny-model.yaml:") and "write it without separators (1024)" in l for l in lines)
    assert any(l.startswith("claims/tiny-model.yaml:") and "did you mean 'confirmed'?" in l for l in lines)
    annotated = subprocess.run([str(bin_dir / "kb"), "validate", "claims/tiny-model.yaml"], cwd=repo,
                               capture_output=True, text=True, env={**env, "GITHUB_ACTIONS": "true"})
    assert "::error file=claims/tiny-model.yaml,line=" in annotated.stdout
    path.write_text(text.replace("value: 1,024", "value: 1024").replace("status: confirmd ", "status: confirmed"))
    assert run("kb", "validate", "--strict", "claims/tiny-model.yaml").returncode == 0
    assert run("kb", "fmt", "--check").returncode == 0
    built = run("kb", "build")
    assert built.returncode == 0, built.stderr
    reports = len(record_files(repo / "claims"))
    assert f"{reports} reports" in built.stderr
    audit = run("audit", "--format", "markdown", "claims/tiny-model.yaml")
    assert audit.returncode == 0 and "### Audit: Tiny Model Technical Report" in audit.stdout


def test_contributing_lists_every_problem_code_with_its_meaning():
    from kb.codes import CODES

    text = (ROOT / "CONTRIBUTING.md").read_text()
    listed = re.findall(r"^\| (KB\d{3}) \| (.+) \|$", text, re.M)
    assert listed == [(c.id, c.summary) for c in CODES.values()]


def test_code_reacts_to_problem_codes_never_to_messages():
    """A part of the program that matches another's message text breaks when the wording improves."""
    import kb.codes

    offenders = []
    for path in [*(ROOT / "kb").rglob("*.py"), *(ROOT / "auditor").rglob("*.py")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bin (?:p|problem|e)\.message\b|\.message\.startswith\(", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == []
    assert all(c.id.startswith("KB") for c in kb.codes.CODES.values())
