"""The hostile-input corpus: cases (files in tests/hostile/, and cases generated here that are too big to commit or
that git cannot hold), how each goes through `kb validate`, `kb build` and `audit`, and how long each takes.

tests/test_hostile.py asserts what each case must end with; `python -m benchmarks --hostile` times each case
against the commands' own start-up (the time is measured here, not judged in a test: these machines are shared).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .measure import ROOT, Run, run as measured

HOSTILE = ROOT / "tests" / "hostile"
GOOD = (ROOT / "tests" / "fixtures" / "good-record.yaml").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
HANG_SECONDS = 60  # a case that runs longer hangs
TIME_TARGET = 2.0  # seconds beyond the command's own start-up
HEADER = re.compile(r"^\ufeff?# hostile: (?P<what>.*?) \| expect: codes=(?P<codes>[\d,]+)(?: line=(?P<line>\d+))? "
                    r"/(?P<regex>.*)/\s*$")


def _exe(name: str) -> str:
    p = BIN / name
    return str(p) if p.exists() else (shutil.which(name) or name)


def run(args: list, cwd: Path, timeout: float = HANG_SECONDS) -> Run:
    """A command as a child process: exit code, output, wall time and its own peak RSS (see benchmarks.measure)."""
    return measured(args, cwd=cwd, timeout=timeout, merge=True, env={**os.environ, "COLUMNS": "200"})


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


def folder_named_yaml(folder: Path) -> Path:
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
    Case("folder-named-yaml", "a folder named x.yaml", {2}, None, "folder", make=folder_named_yaml),
    Case("symlink-loop", "two symbolic links pointing at each other", {2}, None, "symbolic link|loop",
         make=_symlink_loop),
    Case("dangling-symlink", "a symbolic link to nothing", {2}, None, "symbolic link|no such", make=_dangling_symlink),
]

CASES = file_cases() + GENERATED


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
    for name, data in case.files.items():
        (claims / name).write_bytes(data)
    subject = case.make(claims) if case.make else claims / case.subject
    return folder, claims, subject


def run_case(case: Case, root: Path) -> tuple[str, dict[str, Run]]:
    folder, claims, subject = _setup(case, root)
    return subject.name, {name: run(args, folder) for name, args in _commands(claims, subject, folder).items()}




def startup(folder: Path) -> dict[str, float]:
    """Each command's own fixed cost (interpreter start-up, imports, the vocabulary), on a small valid record."""
    claims = folder / "startup" / "claims"
    claims.mkdir(parents=True)
    (claims / "example-run.yaml").write_text(GOOD)
    return {name: min(run(args, claims.parent).seconds for _ in range(3))
            for name, args in _commands(claims, claims / "example-run.yaml", claims.parent).items()}


def main() -> int:
    """Time every case through each command, beyond the command's start-up; the slowest first."""
    with tempfile.TemporaryDirectory(prefix="kb-hostile-") as tmp:
        root = Path(tmp)
        base = startup(root)
        print(f"start-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in base.items()))
        rows = []
        for case in CASES:
            _, runs = run_case(case, root)
            for cmd, r in runs.items():
                rows.append((r.seconds - base[cmd], case.name, cmd, r.peak_mb, r.timed_out))
        rows.sort(reverse=True)
        for extra, name, cmd, mb, hung in rows[:15]:
            verdict = "HANG" if hung else ("PASS" if extra < TIME_TARGET else "MISS")
            print(f"  {name:<34} {cmd:<9} +{extra:5.2f} s beyond start-up  {mb:6.0f} MB  "
                  f"target < {TIME_TARGET:g} s  {verdict}")
        missed = [r for r in rows if r[0] >= TIME_TARGET or r[4]]
        print(f"{len(CASES)} cases × 3 commands: {len(rows) - len(missed)} PASS, {len(missed)} MISS")
    return 0
