"""An installed wheel works from any folder: the vocabulary and the record template ship inside the package, and
the knowledge base is the one given with --claims (or found above the current folder, as git finds a
repository)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import CLAIMS, REAL_CLAIMS, ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The project built as a wheel and installed into a folder of its own (its dependencies are this
    environment's); commands run from a folder outside any knowledge base."""
    tmp = tmp_path_factory.mktemp("install")
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, timeout=600, capture_output=True)
    wheel = next(wheels.glob("report_claims-*.whl"))
    target = tmp / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, timeout=600, capture_output=True)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}

    def run(module: str, *args, cwd: Path = elsewhere):
        return subprocess.run([sys.executable, "-c", f"from {module} import main; main()", *map(str, args)],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    return wheel, target, elsewhere, run


def test_the_wheel_carries_the_vocabulary_and_the_template(installed):
    wheel, target, _, run = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "kb/vocabulary.yaml" in names and "kb/template.yaml" in names
    where = subprocess.run([sys.executable, "-c", "import kb; print(kb.__file__)"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(target)}, cwd=target.parent).stdout
    assert where.startswith(str(target))  # the installed copy, not this checkout


def test_the_installed_commands_validate_build_and_audit_a_knowledge_base_given_with_claims(installed):
    _, _, elsewhere, run = installed
    r = run("kb.cli", "validate", "--claims", CLAIMS)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("kb.cli", "build", "--claims", CLAIMS, "--db", elsewhere / "kb.db")
    assert r.returncode == 0, r.stderr
    assert (elsewhere / "kb.db").exists()
    r = run("auditor.cli", CLAIMS / "olmo.yaml", "--claims", CLAIMS, "--db", elsewhere / "kb.db")
    assert r.returncode == 0, r.stderr
    assert "OLMo 2" in r.stdout and "failed-runs" in r.stdout


def test_the_projects_own_knowledge_base_validates_with_the_installed_wheel(installed):
    _, _, _, run = installed
    from test_knowledge_base import TODAY

    r = run("kb.cli", "validate", "--strict", "--claims", REAL_CLAIMS, "--today", TODAY)
    assert r.returncode == 0, r.stdout + r.stderr


def test_outside_any_knowledge_base_audit_says_so_once_and_still_audits(installed, tmp_path):
    _, _, elsewhere, run = installed
    report = elsewhere / "report.md"
    report.write_text("# A report\n\nWe removed 1.2% of MMLU examples after a 13-gram overlap check.\n")
    r = run("auditor.cli", report)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("no knowledge base to compare with") == 1
    assert "contamination" in r.stdout
    r = run("kb.cli", "validate")
    assert r.returncode == 2 and "no knowledge base here" in r.stderr


def test_commands_find_the_knowledge_base_from_a_subfolder(installed, tmp_path):
    _, _, _, run = installed
    root = tmp_path / "kb"
    (root / "claims").mkdir(parents=True)
    (root / "notes" / "deep").mkdir(parents=True)
    r = run("kb.cli", "new", "some-model", cwd=root / "notes" / "deep")
    assert r.returncode == 0, r.stderr
    assert (root / "claims" / "some-model.yaml").exists()  # the packaged template, in the nearest claims/
    r = run("kb.cli", "validate", cwd=root / "notes")
    assert r.returncode == 1 and "placeholder from the template" in r.stdout
