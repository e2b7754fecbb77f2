"""Files → records: validate the data of each file with the models, and report every problem with file:line:col.

A value that is not valid (or left as the template's placeholder) is reported and replaced by a stand-in, so
that the checks can still report the file's other problems (see validate_record); such a record is `salvaged`
and never built, cited or audited.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterable, Literal, Optional, Union, get_args, get_origin

from pydantic_core import ValidationError  # pydantic's own

from . import codes
from .duplicates import Summary
from .problems import Problem, shown
from .values import SLUG
from .yaml12 import FilePositions, Loc, LazyPositions, Positions, YamlError, parse_yaml, read_text, read_text_and_digest

# kb.model (pydantic's models) is imported where a record or vocabulary is validated by the models: a command that
# reads one record validates it with kb.compiled where it can, without them (a third of its time)
if TYPE_CHECKING:
    from .compiled import Compiled
    from .model import Report, Vocabulary

VOCABULARY_FILE = "_vocabulary.yaml"  # a knowledge base's own vocabulary, in its claims folder
TEMPLATE_FILE = "_template.yaml"
PACKAGED_VOCABULARY = "vocabulary.yaml"
PACKAGED_TEMPLATE = "template.yaml"
# From this many files on, records are parsed by kb.fastyaml (rapidyaml); fewer go straight to kb.yaml12, since
# importing rapidyaml costs about as much as parsing four records the slower way (kb validate FILE, audit FILE).
FAST_PARSE_MIN_FILES = 5


# Validation errors → problems with positions.


def _model_at(model: type, loc: Loc) -> Optional[type]:
    """The pydantic model class that holds the last element of loc, for suggesting field names."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        f = current.model_fields.get(part)
        if f is None:
            return None
        current = _inner_model(f.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    from pydantic import BaseModel

    for _ in range(5):
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        args = [a for a in get_args(annotation) if a is not type(None)]
        if get_origin(annotation) is dict and len(args) == 2:
            annotation = args[1]
        elif args:
            annotation = args[0]  # list[X], Optional[X]: look inside
        else:
            return None
    return None


def _suggest(word: str, choices: Iterable[str]) -> str:
    from rapidfuzz import fuzz, process

    best = process.extractOne(str(word), list(choices), scorer=fuzz.ratio, score_cutoff=70)
    return f"; did you mean {best[0]!r}?" if best else ""


def validation_problems(err: ValidationError, model: type, path: str, positions: Positions) -> list[Problem]:
    return [problem for _, _, problem in _located_problems(err, model, path, positions)]


def _located_problems(err: ValidationError, model: type, path: str, positions: Positions
                      ) -> list[tuple[Loc, str, Problem]]:
    """(where in the data, the error's kind, the problem) for each error pydantic found. A mapping key that is
    not valid has the kind "key"."""
    out = []
    for e in err.errors(include_url=False):
        raw = e["loc"]
        loc = tuple(p for p in raw if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        kind = e["type"]
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        prefer_key = False
        code = codes.SCHEMA
        if kind == "extra_forbidden":
            code = codes.UNKNOWN_FIELD
            holder = _model_at(model, loc)
            choices = holder.model_fields if holder else []
            msg = f"unknown field {shown(loc[-1])}{_suggest(loc[-1], choices)}"
            prefer_key = True
        elif kind == "missing":
            code = codes.MISSING_FIELD
            msg = f"missing required field {loc[-1]!r}"
        elif kind == "literal_error":
            code = codes.NOT_ONE_OF
            expected = e.get("ctx", {}).get("expected", "")
            choices = re.findall(r"'([^']*)'", expected)
            msg = f"{shown(e['input'])} is not one of {expected}{_suggest(e['input'], choices)}"
        elif kind in ("date_from_datetime_parsing", "date_parsing", "date_type", "date_from_datetime_inexact"):
            code = codes.NOT_A_DATE
            msg = f"{shown(e['input'])} is not a date (write YYYY-MM-DD)"
        elif kind == "string_pattern_mismatch" and e.get("ctx", {}).get("pattern") == SLUG:
            code = codes.NOT_AN_ID
            msg = f"{shown(e['input'])} is not a valid id (lowercase letters, digits and hyphens, starting with a letter)"
        elif kind == "string_too_long":
            code = codes.TOO_LONG
            msg = f"too long: {len(str(e['input'])):,} characters, at most {e['ctx']['max_length']:,}"
        elif kind in ("string_type", "list_type", "dict_type", "model_type", "model_attributes_type"):
            code = codes.WRONG_TYPE
            msg = f"{msg.rstrip('.')}, got {_kind_of(e['input'])}"
        elif kind == "value_error":
            # the models raise FigureError and UrlError (kb.model), each with its code
            code = getattr(e.get("ctx", {}).get("error"), "code", codes.SCHEMA)
        line, col = positions.find(loc, prefer_key=prefer_key)
        field_path = ".".join(str(p) for p in loc) or None
        out.append((loc, "key" if "[key]" in raw else kind, Problem(path, code, msg, line, col, field_path)))
    return out


def _kind_of(v: Any) -> str:
    if v is None:
        return "nothing (null)"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return shown(v)


@dataclass
class Loaded:
    """A record read from a file, with where each of its values starts."""

    path: str
    report: Report
    positions: Union[Positions, LazyPositions, FilePositions]
    digest: Optional[str] = None  # sha256 of the file's bytes
    stamp: Optional[tuple[int, int]] = None  # (size, mtime_ns) of the file before it was read
    # Where the file's values were not valid (a salvaged record): these hold stand-ins, so that the checks can
    # still report every other problem of the file; what the checks find there is not reported.
    salvaged: frozenset = frozenset()

    def hides(self, problem: Problem) -> bool:
        """Whether a problem the checks found is about a value that was not valid to begin with (or, for a
        warning, about the claim or source that holds it: a misspelt `sorce` is not also a claim without a
        source)."""
        if not self.salvaged or problem.field is None:
            return False
        field = problem.field + "."
        for loc in self.salvaged:
            scope = loc if problem.severity == "error" or len(loc) < 2 else loc[:-1]
            if field.startswith(".".join(map(str, scope)) + "."):
                return True
        return False

    def where(self, *loc: Any, key: bool = False) -> tuple[Optional[int], Optional[int]]:
        return self.positions.find(loc, prefer_key=key)

    def problem(self, code: str, message: str, *loc: Any, severity: str = "error", key: bool = False) -> Problem:
        line, col = self.where(*loc, key=key)
        return Problem(self.path, code, message, line, col, ".".join(str(p) for p in loc) or None, severity)

    def forget_positions(self) -> None:
        """Let the file's text (kept to find positions) go, once every problem has been reported; the top-level
        fields' positions stay (a near duplicate's warning names the line of its title)."""
        self.positions = self.positions.top()

    def summary(self) -> Summary:
        r = self.report
        return Summary(r.id, r.title, r.organization, tuple(r.models), self.path, self.where("title")[0])


@dataclass
class LoadResult:
    records: list[Loaded] = field(default_factory=list)  # the records that are valid
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    # Records of files with values that are not valid, with stand-ins for them: checked for the file's other
    # problems, never built, cited or audited.
    salvaged: list[Loaded] = field(default_factory=list)

    @property
    def reports(self) -> list[Report]:
        return [r.report for r in self.records]

    def extend(self, other: "LoadResult") -> None:
        self.records += other.records
        self.problems += other.problems
        self.files += other.files
        self.salvaged += other.salvaged


def load_file(path: Union[str, Path], display: Optional[str] = None, fast: bool = True,
              compiled: Optional[Compiled] = None, all_positions: bool = False) -> LoadResult:
    """One record file → a LoadResult with the record (if it validated) and every problem found. `fast`: parse
    with kb.fastyaml where it reads the file exactly (the same data and problems as kb.yaml12, sooner).
    `compiled`: validators to try first (validate_record). `all_positions`: every value's position will be asked for
    (audit names each claim's line): found in the same parse, not by parsing the text again."""
    path = Path(path)
    name = display or str(path)
    result = LoadResult(files=1)
    try:
        text, digest, stamp = read_text_and_digest(path)
        if all_positions:
            data, positions = parse_yaml(text)
        elif fast:
            from .fastyaml import parse_record  # rapidyaml where it reads the file exactly, else libyaml

            data, positions = parse_record(text)
        else:
            data, positions = parse_yaml(text, lazy=True)
    except YamlError as e:
        result.problems.append(Problem(name, e.code, e.message, e.line, e.col))
        return result
    if not isinstance(data, dict):
        line, col = positions.find(())
        result.problems.append(Problem(name, codes.NOT_A_MAPPING, f"a record is a mapping of fields, got "
                                                                  f"{_kind_of(data)}", line, col))
        return result
    # a value left as a placeholder holds a "<", written so or escaped: most files have neither
    report, problems, bad = validate_record(data, name, positions, placeholders="<" in text or "\\" in text,
                                            compiled=compiled)
    result.problems += problems
    if report is not None:
        loaded = Loaded(name, report, positions, digest, stamp, frozenset(bad))
        (result.salvaged if problems else result.records).append(loaded)
    return result


# A value left as the template wrote it: "<the report's own title>".
PLACEHOLDER = re.compile(r"^<[^<>\n]{2,}>$")
MAX_SALVAGE = 20  # rounds of stand-ins before a file's other problems are given up on


def _placeholders(data: Any, loc: Loc = ()) -> Iterable[tuple[Loc, str]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _placeholders(v, loc + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _placeholders(v, loc + (i,))
    elif isinstance(data, str) and PLACEHOLDER.match(data.strip()):
        yield loc, data


def validate_record(data: dict, name: str, positions, placeholders: bool = True, compiled: Optional[Compiled] = None
                    ) -> tuple[Optional[Report], list[Problem], set[Loc]]:
    """The record, the problems of its values, and where they are. Values left as the template's placeholders
    and values that are not valid are reported, then replaced by stand-ins until the rest validates, so that the
    checks can report the file's other problems too (the record comes back salvaged: see Loaded.salvaged).
    Returns no record only when no stand-ins make it valid. `placeholders`: False when the file's text shows
    that none of its values can be one. `compiled`: validators of the same schema without pydantic's models
    (kb.compiled), for a record that is valid: a record they refuse is validated again by the models, which say
    what is wrong."""
    problems: list[Problem] = []
    bad: set[Loc] = set()
    work = data  # copied before the first stand-in: most records need none, and copying was a tenth of reading
    copied = False

    def stand_in(loc: Loc, kind: str) -> None:
        nonlocal work, copied
        if not copied:
            work, copied = copy.deepcopy(work), True
        _stand_in(work, loc, kind)

    for loc, value in _placeholders(data) if placeholders else ():
        line, col = positions.find(loc)
        problems.append(Problem(name, codes.PLACEHOLDER, f"{shown(value)} is a placeholder from the template: replace it with the "
                                      f"record's own value, or delete the field if it is optional", line, col,
                                ".".join(map(str, loc))))
        bad.add(loc)
        stand_in(loc, "placeholder")
    if compiled is not None and not problems:
        try:
            return compiled.report(data), problems, bad
        except ValidationError:
            pass
    from .model import Report

    for _ in range(MAX_SALVAGE):
        try:
            return Report.model_validate(work), problems, bad
        except ValidationError as err:
            fresh = False
            for loc, kind, problem in _located_problems(err, Report, name, positions):
                if any(loc[:len(b)] == b for b in bad):
                    continue  # a value already reported (a placeholder) seen again
                problems.append(problem)
                fresh = True
                bad.add(loc)
                stand_in(loc, kind)
            if not fresh:
                break
    return None, problems, bad


def _stand_in(data: dict, loc: Loc, kind: str) -> None:
    """Replace the value at loc by one that validates (or remove it, where that is valid)."""
    if not loc:
        return
    parent: Any = data
    for part in loc[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return
    key = loc[-1]
    from .model import Report

    value = None if kind in ("extra_forbidden", "key") else _stand_in_value(_type_at(Report, loc), key)
    if isinstance(parent, dict) and value is None:
        parent.pop(key, None)  # an unknown field or key, or a figure: leave it out
    elif isinstance(parent, (dict, list)):
        try:
            parent[key] = value
        except (IndexError, TypeError):
            return


def _type_at(model: type, loc: Loc) -> Any:
    """The type of the value at loc in a model (Any where the model does not say)."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = get_args(current)
            current = args[0] if args else Any
        elif isinstance(current, type) and issubclass(current, BaseModel):
            f = current.model_fields.get(part)
            if f is None:
                return Any
            current = f.annotation
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return Any
    return current


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union:
            annotation = next((a for a in get_args(annotation) if a is not type(None)), Any)
        else:
            return annotation


def _stand_in_value(annotation: Any, key: Any) -> Any:
    from pydantic import BaseModel

    t = _unwrap(annotation)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return {name: _stand_in_value(f.annotation, name) for name, f in t.model_fields.items()
                if f.is_required() or name == "url"}
    if get_origin(t) is Literal:
        return get_args(t)[0]
    if t is date:
        return "0001-01-01"
    if t is str:
        return "https://invalid.invalid/" if key == "url" else "x"
    if get_origin(t) is list or t is list:
        return []
    if get_origin(t) is dict or t is dict:
        return {}
    return None


def record_files(path: Union[str, Path]) -> list[Path]:
    """The record files under a folder: *.yaml and *.yml, recursively, skipping names that start with _ or .
    (the vocabulary, the template), in path order. Links to folders are not followed (as Path.rglob); a link
    to a file is a file, and a link that leads nowhere (a missing target, a loop) is kept, so it is reported
    as unreadable, not skipped."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    return [p for _, p in named_record_files(path)]


def named_record_files(folder: Path) -> list[tuple[str, Path]]:
    """record_files of a folder, each with its path relative to the folder (with /): the name a build records."""
    found: list[tuple[str, ...]] = []

    def walk(folder: str, rel: tuple[str, ...]) -> None:
        # os.scandir, not rglob: the entries' types come with the listing (a knowledge base of thousands of
        # files is listed on every one-record command)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            return
        for e in entries:
            if e.name.startswith(("_", ".")):
                continue
            try:
                is_dir, is_file = e.is_dir(), e.is_file()
            except OSError:  # a loop of links
                is_dir = is_file = False
            if is_dir:
                if not e.is_symlink():
                    walk(e.path, rel + (e.name,))
            elif os.path.splitext(e.name)[1] in (".yaml", ".yml") and (
                    is_file or (e.is_symlink() and not os.path.exists(e.path))):
                found.append(rel + (e.name,))

    walk(str(folder), ())
    return [("/".join(parts), folder.joinpath(*parts)) for parts in sorted(found)]


def load_paths(paths: Iterable[Union[str, Path]], progress: Any = None, compact: bool = False,
               on_record: Optional[Callable[["Loaded"], Any]] = None, compiled: Optional[Compiled] = None,
               all_positions: bool = False) -> LoadResult:
    """Files and folders → records and problems. Every file is read; a bad one never stops the others. With
    `compact`, each valid record is made smaller as soon as it is read (kb.compact: for records nothing will
    change, as in kb build). `on_record` is given each valid record as soon as it is read (kb build audits them
    while it reads the rest). `compiled`, `all_positions`: load_file's."""
    names: dict = {}
    result = LoadResult()
    found: list[Union[Problem, list[Path]]] = []  # in the order given: a path's problem, or its files
    for p in paths:
        p = Path(p)
        if not p.exists() and not p.is_symlink():
            found.append(Problem(str(p), codes.NOT_A_FILE, "no such file or folder"))
        elif p.is_dir() and p.suffix in (".yaml", ".yml"):
            found.append(Problem(str(p), codes.NOT_A_FILE, "is a folder, not a record file"))
        else:
            found.append(record_files(p))
    fast = sum(len(f) for f in found if isinstance(f, list)) >= FAST_PARSE_MIN_FILES
    if compact:
        from .compact import compact_report  # a build's (it imports pydantic's models)
    for files in found:
        if isinstance(files, Problem):
            result.problems.append(files)
            continue
        for f in progress(files) if progress else files:
            one = load_file(f, fast=fast, compiled=compiled, all_positions=all_positions)
            if compact:
                for rec in one.records:
                    compact_report(rec.report, names)
                    # the file's text is not kept to find positions: read again if a problem needs one
                    rec.positions = FilePositions(rec.path, rec.digest, rec.positions.top())
            if on_record is not None:
                for rec in one.records:
                    on_record(rec)
            result.extend(one)
    return result


def load_vocabulary(path: Union[str, Path], compiled: Optional[Compiled] = None) -> Vocabulary:
    """The vocabulary file → Vocabulary, or VocabularyError listing its problems. `compiled`: as for
    validate_record."""
    path = Path(path)
    try:
        data, positions = parse_yaml(read_text(path))
    except YamlError as e:
        raise VocabularyError([Problem(str(path), e.code, e.message, e.line, e.col)])
    if compiled is not None:
        try:
            return compiled.vocabulary(data)
        except ValidationError:
            pass
    from .model import Vocabulary

    try:
        return Vocabulary.model_validate(data)
    except ValidationError as err:
        raise VocabularyError(validation_problems(err, Vocabulary, str(path), positions))


class VocabularyError(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def packaged(name: str) -> Path:
    """A data file shipped inside the kb package (the vocabulary, the record template)."""
    return Path(__file__).with_name(name)  # not importlib.resources: kb is a folder on disk, and that import costs


def vocabulary_path(claims_dir: Union[str, Path, None]) -> Path:
    """The vocabulary that goes with a claims folder: its own _vocabulary.yaml where it has one (a knowledge
    base may add patterns, omissions or units), else the one shipped with the package."""
    if claims_dir is not None:
        p = Path(claims_dir) / VOCABULARY_FILE
        if p.exists():
            return p
    return packaged(PACKAGED_VOCABULARY)


def template_path(claims_dir: Union[str, Path, None]) -> Path:
    """The template for a new record: the knowledge base's own _template.yaml, else the packaged one."""
    if claims_dir is not None:
        p = Path(claims_dir) / TEMPLATE_FILE
        if p.exists():
            return p
    return packaged(PACKAGED_TEMPLATE)
