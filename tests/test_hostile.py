"""Hostile input: every case goes through the real `kb validate`, `kb build` and `audit` commands as child processes.

Each case must end with a clear message naming the file (and its line where there is one), exit 1 or 2 (0 for a
valid-but-odd file, which must validate cleanly), print no traceback, end at all (a generous timeout: a hang is
the failure; how long each case takes is measured by the benchmark, `python -m benchmarks --hostile`), and stay
under 200 MB of resident memory.

The cases are files in tests/hostile/ (line 1 of each says what it is and what to expect:
`# hostile: WHAT | expect: codes=1,2 line=N /regex/`), a folder there for cases that need several files, and
cases generated here that would be too big to commit (a 5 MB line, 100,000 claims in one file, a 12 MB file) or
that git cannot hold (a folder named x.yaml, a symbolic-link loop).

`audit` reads a record the way `kb validate` does; problems the checks find (formulas, dates) do not stop an
audit, which exits 0 and lists each as a `check` finding with its line. Problems that make the file unreadable
or not a record (YAML, bytes, the schema) make it exit 2.
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks.hostile import CASES, Case, folder_named_yaml, run_case  # noqa: E402
from benchmarks.measure import Run  # noqa: E402

MEMORY_LIMIT_MB = 200
# Problems found by the checks (after the record was read and matched the schema): audit runs on, listing them.
CHECK_LEVEL = re.compile(r"^(formula-|future-|check-)")


def test_the_corpus_has_at_least_forty_cases():
    assert len(CASES) >= 40
    assert len([c for c in CASES if c.codes != {0}]) >= 40


@pytest.fixture(scope="module")
def results(request, tmp_path_factory) -> dict[str, tuple[Case, str, dict[str, Run]]]:
    root = tmp_path_factory.mktemp("hostile")
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.originalname == "test_hostile_case" and hasattr(item, "callspec")}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {c.name: (c, pool.submit(run_case, c, root)) for c in CASES if c.name in selected}
        return {name: (c, *f.result()) for name, (c, f) in futures.items()}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_hostile_case(name, results):
    case, subject, runs = results[name]
    for cmd, r in runs.items():
        where = f"{name} ({case.what}) through {cmd}: exit {r.code}, {r.seconds:.2f} s, {r.peak_mb:.0f} MB\n{r.output[-2500:]}"
        assert not r.timed_out, where
        assert "Traceback" not in r.output, where
        assert r.peak_mb < MEMORY_LIMIT_MB, where
        if case.codes == {0}:  # valid but odd: must validate, build and audit cleanly
            assert r.code == 0, where
            if cmd == "validate":
                assert "0 errors, 0 warnings" in r.output, where
            continue
        if cmd == "build" and case.make in (folder_named_yaml,):
            # the build reads the folder's record files; a folder named x.yaml is not one and holds none
            assert r.code == 0, where
            continue
        check_level = bool(CHECK_LEVEL.match(name))
        if cmd == "audit" and check_level:
            # the record is read; the audit runs and lists the checks' problem as a finding with its line
            assert r.code == 0, where
            assert re.search(rf"(check|derived-mismatch|no-check-date): line {case.line}: .*({case.regex})", r.output), where
            continue
        # validate: 1 for problems, 2 for a file that cannot be read; build: 1, nothing written; audit: 2, not a
        # record it can read
        expected = {"validate": case.codes, "build": {1}, "audit": {2}}[cmd]
        assert r.code in expected, where
        assert subject in r.output, where  # the message names the file
        if case.line:
            assert re.search(rf"{re.escape(subject)}:{case.line}\b", r.output), where
        if case.regex:
            assert re.search(case.regex, r.output, re.IGNORECASE), where
