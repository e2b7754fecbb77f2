"""Hostile input: every case goes through the real `kb validate`, `kb build` and `audit` commands as child processes.

Each case must end with a clear message naming the file (and its line where there is one), exit 1 or 2 (0 for a
valid-but-odd file, which must validate cleanly), print no traceback, and stay under 2 s beyond the command's
own start-up and under 200 MB of resident memory.

The cases are files in tests/hostile/ (line 1 of each says what it is and what to expect:
`# hostile: WHAT | expect: codes=1,2 line=N /regex/`), a folder there for cases that need several files, and
cases generated here that would be too big to commit (a 5 MB line, 100,000 claims in one file, a 12 MB file) or
that git cannot hold (a folder named x.yaml, a symbolic-link loop).

`audit` reads a record the way `kb validate` does; problems the checks find (formulas, dates) do not stop an
audit, which exits 0 and lists each as a `check` finding with its line. Problems that make the file unreadable
or not a record (YAML, bytes, the schema) make it exit 2.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from conftest import GOOD, ROOT, VOCABULARY

sys.path.insert(0, str(ROOT))
from benchmarks import measure  # noqa: E402
from benchmarks.measure import Run  # noqa: E402

HOSTILE = Path(__file__).resolve().parent / "hostile"
BIN = Path(sys.executable).parent
TIME_LIMIT = 2.0  # seconds beyond the command's start-up
MEMORY_LIMIT_MB = 200
HEADER = re.compile(r"^\ufeff?# hostile: (?P<what>.*?) \| expect: codes=(?P<codes>[\d,]+)(?: line=(?P<line>\d+))? "
                    r"/(?P<regex>.*)/\s*$")
# Problems found by the checks (after the record was read and matched the schema): audit runs on, listing them.
CHECK_LEVEL = re.compile(r"^(formula-|future-)")


def _exe(name: str) -> str:
    p = BIN / name
    return str(p) if p.exists() else (shutil.which(name) or name)


def run(args: list, cwd: Path, timeout: float = 60) -> Run:
    """A command as a child process: exit code, output, wall time and its own peak RSS (see benchmarks.measure)."""
    return measure.run(args, cwd=cwd, timeout=timeout, merge=True, env={**os.environ, "COLUMNS": "200"})


@dataclass
class Case:
    name: str
    what: str
    codes: set[int]
    line: Optional[int]
    regex: str
    files: dict[str, bytes] = field(default_factory=dict)  # file name → content, all put in the knowledge base
    subject: str = ""  # the file validated and audited
    make: Optional[callable] = None  # for cases that cannot be plain files: make(folder) -> subject path


def _read_case(path: Path) -> tuple:
    first = path.read_bytes().split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
    m = HEADER.match(first)
    assert m, f"{path}: no header line"
    return (m["what"], {int(c) for c in m["codes"].split(",")}, int(m["line"]) if m["line"] else None, m["regex"])


def file_cases() -> list[Case]:
    cases = []
    for p in sorted(HOSTILE.iterdir()):
        if p.is_file() and p.suffix == ".yaml":
            what, codes, line, regex = _read_case(p)
            cases.append(Case(p.stem, what, codes, line, regex, {p.name: p.read_bytes()}, p.name))
        elif p.is_dir():
            files = sorted(p.glob("*.yaml"))
            what, codes, line, regex = _read_case(files[0])
            cases.append(Case(p.name, what, codes, line, regex, {f.name: f.read_bytes() for f in files}, files[0].name))
    return cases


def _good(name: str) -> str:
    return GOOD.replace("id: example-run", f"id: {name}", 1)


def _five_mb_line(folder: Path) -> Path:
    p = folder / "five-mb-line.yaml"
    p.write_text(_good("five-mb-line").replace("title: An Example Training Report",
                                               "title: " + "A long title " * (5 * 1024 * 1024 // 13), 1))
    return p


def _hundred_thousand_claims(folder: Path) -> Path:
    head, _, _ = _good("hundred-thousand-claims").partition("claims:\n")
    body = "".join(f"  - {{id: c{i}, statement: Claim number {i}., value: {i}, unit: GPUs, status: unverified}}\n"
                   for i in range(100_000))
    p = folder / "hundred-thousand-claims.yaml"
    p.write_text(head + "claims:\n" + body)
    return p


def _twelve_mb_file(folder: Path) -> Path:
    p = folder / "twelve-mb.yaml"
    p.write_text(_good("twelve-mb") + "# " + "padding " * (12 * 1024 * 1024 // 8) + "\n")
    return p


def _folder_named_yaml(folder: Path) -> Path:
    p = folder / "folder-named-yaml.yaml"
    p.mkdir()
    return p


def _symlink_loop(folder: Path) -> Path:
    a, b = folder / "symlink-loop.yaml", folder / "symlink-loop-b.yaml"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    return a


def _dangling_symlink(folder: Path) -> Path:
    p = folder / "dangling-symlink.yaml"
    p.symlink_to("no-such-target.yaml")
    return p


GENERATED = [
    Case("five-mb-line", "a 5 MB line (a 5 MB title)", {1}, 2, "too long", make=_five_mb_line),
    Case("hundred-thousand-claims", "100,000 claims in one file", {1}, None, "more than 100,000 values",
         make=_hundred_thousand_claims),
    Case("twelve-mb-file", "a 12 MB file", {2}, None, "bytes", make=_twelve_mb_file),
    Case("folder-named-yaml", "a folder named x.yaml", {2}, None, "folder", make=_folder_named_yaml),
    Case("symlink-loop", "two symbolic links pointing at each other", {2}, None, "symbolic link|loop",
         make=_symlink_loop),
    Case("dangling-symlink", "a symbolic link to nothing", {2}, None, "symbolic link|no such", make=_dangling_symlink),
]

CASES = file_cases() + GENERATED


def test_the_corpus_has_at_least_forty_cases():
    assert len(CASES) >= 40
    assert len([c for c in CASES if c.codes != {0}]) >= 40


@pytest.fixture(scope="module")
def startup(tmp_path_factory) -> dict[str, float]:
    """Each command's own fixed cost (interpreter start-up, imports, the vocabulary), measured here on a small
    valid record: the time limit applies to what a case adds to it."""
    folder = tmp_path_factory.mktemp("startup")
    claims = folder / "claims"
    claims.mkdir()
    shutil.copy(VOCABULARY, claims / "_vocabulary.yaml")
    (claims / "example-run.yaml").write_text(GOOD)
    out = {}
    for name, args in _commands(claims, claims / "example-run.yaml", folder).items():
        runs = [run(args, folder) for _ in range(2)]
        assert all(r.code == 0 for r in runs), runs[0].output
        out[name] = min(r.seconds for r in runs)
    out["python"] = min(run([sys.executable, "-c", "pass"], folder).seconds for _ in range(3))
    return out


def _commands(claims: Path, subject: Path, folder: Path) -> dict[str, list]:
    return {
        "validate": [_exe("kb"), "validate", subject, "--claims", claims],
        "build": [_exe("kb"), "build", "--claims", claims, "--db", folder / "site" / "kb.db"],
        "audit": [_exe("audit"), subject, "--claims", claims],
    }


def _setup(case: Case, root: Path) -> tuple[Path, Path, Path]:
    folder = root / case.name
    claims = folder / "claims"
    claims.mkdir(parents=True)
    shutil.copy(VOCABULARY, claims / "_vocabulary.yaml")
    for name, data in case.files.items():
        (claims / name).write_bytes(data)
    subject = case.make(claims) if case.make else claims / case.subject
    return folder, claims, subject


def _run_case(case: Case, root: Path) -> tuple[str, dict[str, Run]]:
    folder, claims, subject = _setup(case, root)
    return subject.name, {name: run(args, folder) for name, args in _commands(claims, subject, folder).items()}


@pytest.fixture(scope="module")
def results(request, tmp_path_factory, startup) -> dict[str, tuple[Case, str, dict[str, Run]]]:
    root = tmp_path_factory.mktemp("hostile")
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.originalname == "test_hostile_case" and hasattr(item, "callspec")}
    with ThreadPoolExecutor(max_workers=2) as pool:  # two cores: a case's timing competes with one other case
        futures = {c.name: (c, pool.submit(_run_case, c, root)) for c in CASES if c.name in selected}
        return {name: (c, *f.result()) for name, (c, f) in futures.items()}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_hostile_case(name, results, startup):
    case, subject, runs = results[name]
    for cmd, r in runs.items():
        where = f"{name} ({case.what}) through {cmd}: exit {r.code}, {r.seconds:.2f} s, {r.peak_mb:.0f} MB\n{r.output[-2500:]}"
        assert not r.timed_out, where
        assert "Traceback" not in r.output, where
        assert r.seconds - startup[cmd] < TIME_LIMIT, where
        assert r.peak_mb < MEMORY_LIMIT_MB, where
        if case.codes == {0}:  # valid but odd: must validate, build and audit cleanly
            assert r.code == 0, where
            if cmd == "validate":
                assert "0 errors, 0 warnings" in r.output, where
            continue
        if cmd == "build" and case.make in (_folder_named_yaml,):
            # the build reads the folder's record files; a folder named x.yaml is not one and holds none
            assert r.code == 0, where
            continue
        check_level = bool(CHECK_LEVEL.match(name))
        if cmd == "audit" and check_level:
            # the record is read; the audit runs and lists the checks' problem as a finding with its line
            assert r.code == 0, where
            assert re.search(rf"check: line {case.line}: .*({case.regex})", r.output), where
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
