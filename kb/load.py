"""Files → records: read YAML strictly, validate with the models, and report every problem with file:line:col.

The YAML is parsed by libyaml (PyYAML's C parser) into nodes, and the nodes are turned into Python data here
rather than by PyYAML's constructors, because those read YAML 1.1 (`no` is False, `3.10` is 3.1, `1e25` is a
string, `12:30` is 750) and silently keep the last of two duplicate keys. Here:

- a scalar stays the text that was written, and the model's field type decides what it means (a date field
  parses a date, a figure field parses a number, a string field keeps "3.10" and "no" as written); only the
  YAML 1.2 null spellings (`~`, `null`, empty) become None;
- duplicate keys are an error naming both lines; explicit tags other than !!str/!!seq/!!map are rejected;
- aliases are followed, but the number of nodes built from one file and the nesting depth are bounded, so an
  alias bomb or a deeply nested file fails fast with a message instead of eating the machine.
"""

from __future__ import annotations

import copy
import hashlib
import os
from importlib import resources

import re
from dataclasses import dataclass, field
from pathlib import Path
from datetime import date
from typing import Annotated, Any, Iterable, Literal, Optional, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from .model import SLUG, Report, Vocabulary
from .problems import Problem, shown

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_NODES = 100_000  # nodes built from one file, aliases counted each time they are followed
MAX_DEPTH = 64

VOCABULARY_FILE = "_vocabulary.yaml"  # a knowledge base's own vocabulary, in its claims folder
TEMPLATE_FILE = "_template.yaml"
PACKAGED_VOCABULARY = "vocabulary.yaml"
PACKAGED_TEMPLATE = "template.yaml"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_PLAIN = "!kb/plain"
_QUOTED = "!kb/quoted"
_ALLOWED_TAGS = {"tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map", "!"}

Loc = tuple  # a path into the data: ("claims", 3, "value")


class _NodeLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """Composes nodes only; scalars are tagged plain or quoted instead of being resolved by YAML 1.1 rules."""

    def resolve(self, kind, value, implicit):  # noqa: D401 - PyYAML's hook
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return _PLAIN
            if implicit[1]:
                return _QUOTED
        return super().resolve(kind, value, implicit)


class YamlError(Exception):
    def __init__(self, message: str, line: Optional[int] = None, col: Optional[int] = None):
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@dataclass
class Positions:
    """Where each value (and each mapping key) of a loaded file starts, 1-based."""

    values: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)

    def find(self, loc: Loc, prefer_key: bool = False) -> tuple[Optional[int], Optional[int]]:
        loc = tuple(loc)
        if prefer_key and loc in self.keys:
            return self.keys[loc]
        while loc:
            if loc in self.values:
                return self.values[loc]
            loc = loc[:-1]
        return self.values.get((), (None, None))


class LazyPositions:
    """Positions found when first asked for, by parsing the text again. A record that validates and checks
    cleanly never needs them, and they take most of a loaded record's memory (5 KB a claim)."""

    def __init__(self, text: str):
        self._text: Optional[str] = text
        self._found: Optional[Positions] = None

    def find(self, loc: Loc, prefer_key: bool = False) -> tuple[Optional[int], Optional[int]]:
        if self._found is None:
            self._found = parse_yaml(self._text or "")[1]
            self._text = None
        return self._found.find(loc, prefer_key)


def _mark(node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self, positions: bool = True) -> None:
        self.positions = Positions()
        self.record = positions
        self.active: set[int] = set()

    def build(self, node, loc: Loc = ()) -> Any:
        if len(loc) > MAX_DEPTH:
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels", *_mark(node))
        if self.record:
            self.positions.values[loc] = _mark(node)
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            if tag == _PLAIN:
                return None if _NULL.match(node.value) else node.value
            if tag in (_QUOTED, "tag:yaml.org,2002:str", "!"):
                return node.value
            raise YamlError(f"tag {tag!r} is not allowed (only plain values, lists and mappings)", *_mark(node))
        if tag not in _ALLOWED_TAGS:
            raise YamlError(f"tag {tag!r} is not allowed (only plain values, lists and mappings)", *_mark(node))
        if id(node) in self.active:
            raise YamlError("an alias refers to a value that contains it (a recursive structure)", *_mark(node))
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(child, loc + (i,)) for i, child in enumerate(node.value)]
            return self._mapping(node, loc)
        finally:
            self.active.discard(id(node))

    def _mapping(self, node, loc: Loc) -> dict:
        out: dict = {}
        first: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError("a key must be a plain word, not a list or mapping", *_mark(key_node))
            key = key_node.value
            if key == "<<" and key_node.tag == _PLAIN:
                raise YamlError("merge keys (<<) are YAML 1.1 only and not supported; write the fields out",
                                *_mark(key_node))
            if key in first:
                line, col = _mark(key_node)
                raise YamlError(f"duplicate key {shown(key)}: first at line {first[key][0]}, again at line {line}",
                                line, col)
            first[key] = _mark(key_node)
            if self.record:
                self.positions.keys[loc + (key,)] = first[key]
            out[key] = self.build(value_node, loc + (key,))
        return out


def _expanded_size(node, memo: dict, active: set) -> int:
    """How many values the node expands to once aliases are followed, computed once per distinct node, so a
    billion-laughs document is measured in microseconds without expanding it."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in active:
        raise YamlError("an alias refers to a value that contains it (a recursive structure)", *_mark(node))
    if isinstance(node, yaml.ScalarNode):
        return 1
    if len(active) > MAX_DEPTH:
        raise YamlError(f"nested deeper than {MAX_DEPTH} levels", *_mark(node))
    active.add(key)
    children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
    total = 1
    for child in children:
        total += _expanded_size(child, memo, active)
        if total > MAX_NODES:
            break
    active.discard(key)
    memo[key] = total
    return total


def _count_events(text: str, limit: int) -> Optional[yaml.Event]:
    """The first node event past `limit` node events (scalars, aliases, lists, mappings), or None: a pass over
    the parser's events that stops early and keeps nothing, so a file of a million tiny values is refused in
    a fraction of a second instead of composing every node first."""
    n = 0
    for event in yaml.parse(text, Loader=_NodeLoader):
        if isinstance(event, yaml.NodeEvent):
            n += 1
            if n > limit:
                return event
    return None


def _could_exceed(text: str, limit: int) -> bool:
    """Whether the text may hold more than `limit` nodes. A node starts at the top of the file or after a line
    break or one of these characters, and at most two nodes start at one place (a block mapping and its first
    key), so a text whose count is small enough holds fewer nodes (the count is cheap: C loops)."""
    return 2 * sum(text.count(c) for c in "\n,[{-:?&*") + 2 > limit


def parse_yaml(text: str, lazy: bool = False) -> tuple[Any, Union[Positions, LazyPositions]]:
    """YAML text → (data, positions). Raises YamlError with a 1-based line and column. `lazy`: the positions
    are found only when first asked for (by parsing the text again)."""
    try:
        if _could_exceed(text, MAX_NODES):
            over = _count_events(text, MAX_NODES)
            if over is not None:
                raise YamlError(f"more than {MAX_NODES:,} values in one file (the limit for a record); "
                                f"refusing to read further", over.start_mark.line + 1, over.start_mark.column + 1)
        node = yaml.compose(text, Loader=_NodeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "invalid YAML"
        if e.context and e.problem:
            opened = e.context_mark
            if opened is not None and mark is not None and opened.line != mark.line:
                # an unclosed quote or bracket is found at the end: say where it was opened
                what = f"{e.problem} ({e.context} that starts at line {opened.line + 1}, column {opened.column + 1})"
            else:
                what = f"{e.problem} ({e.context})"
        if mark is None:
            raise YamlError(what)
        raise YamlError(what, mark.line + 1, mark.column + 1)
    except yaml.reader.ReaderError as e:
        pos = e.position
        line = text.count("\n", 0, pos) + 1
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        raise YamlError(f"character {char} is not allowed: {e.reason}", line, pos - (text.rfind("\n", 0, pos) + 1) + 1)
    except yaml.YAMLError as e:
        raise YamlError(str(e).splitlines()[0] if str(e) else "invalid YAML")
    except RecursionError:
        raise YamlError("nested too deeply to parse")
    if node is None:
        raise YamlError("the file is empty", 1, 1)
    size = _expanded_size(node, {}, set())
    if size > MAX_NODES:
        raise YamlError(
            f"{size:,} values after following aliases, more than {MAX_NODES:,} (an alias bomb?); refusing to expand",
            *_mark(node),
        )
    builder = _Builder(positions=not lazy)
    data = builder.build(node)
    return data, LazyPositions(text) if lazy else builder.positions


def read_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A file's text, or a YamlError saying why it cannot be read (too big, not UTF-8, NUL bytes)."""
    return read_text_and_digest(path, max_bytes)[0]


def read_text_and_digest(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[str, str, tuple[int, int]]:
    """read_text, the sha256 of the bytes read and the (size, mtime_ns) seen just before reading them (what a
    build records of each file it read)."""
    try:
        st = path.stat()
        size = st.st_size
        if size > max_bytes:
            raise YamlError(f"file is {size:,} bytes; the limit is {max_bytes:,}")
        raw = path.read_bytes()
    except OSError as e:
        link = " (a symbolic link that leads nowhere: a missing target or a loop)" if path.is_symlink() else ""
        raise YamlError(f"cannot read: {e.strerror or e}{link}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise YamlError(f"not valid UTF-8 (byte 0x{raw[e.start]:02x})", line, col)
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise YamlError("contains a NUL byte", line, nul - (text.rfind("\n", 0, nul) + 1) + 1)
    return text, hashlib.sha256(raw).hexdigest(), (st.st_size, st.st_mtime_ns)


# Validation errors → problems with positions.


def _model_at(model: type, loc: Loc) -> Optional[type]:
    """The pydantic model class that holds the last element of loc, for suggesting field names."""
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
        if kind == "extra_forbidden":
            holder = _model_at(model, loc)
            choices = holder.model_fields if holder else []
            msg = f"unknown field {shown(loc[-1])}{_suggest(loc[-1], choices)}"
            prefer_key = True
        elif kind == "missing":
            msg = f"missing required field {loc[-1]!r}"
        elif kind == "literal_error":
            expected = e.get("ctx", {}).get("expected", "")
            choices = re.findall(r"'([^']*)'", expected)
            msg = f"{shown(e['input'])} is not one of {expected}{_suggest(e['input'], choices)}"
        elif kind in ("date_from_datetime_parsing", "date_parsing", "date_type", "date_from_datetime_inexact"):
            msg = f"{shown(e['input'])} is not a date (write YYYY-MM-DD)"
        elif kind == "string_pattern_mismatch" and e.get("ctx", {}).get("pattern") == SLUG:
            msg = f"{shown(e['input'])} is not a valid id (lowercase letters, digits and hyphens, starting with a letter)"
        elif kind == "string_too_long":
            msg = f"too long: {len(str(e['input'])):,} characters, at most {e['ctx']['max_length']:,}"
        elif kind in ("string_type", "list_type", "dict_type", "model_type", "model_attributes_type"):
            msg = f"{msg.rstrip('.')}, got {_kind_of(e['input'])}"
        line, col = positions.find(loc, prefer_key=prefer_key)
        field_path = ".".join(str(p) for p in loc) or None
        out.append((loc, "key" if "[key]" in raw else kind, Problem(path, msg, line, col, field_path)))
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
    positions: Union[Positions, LazyPositions]
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

    def problem(self, message: str, *loc: Any, severity: str = "error", key: bool = False) -> Problem:
        line, col = self.where(*loc, key=key)
        return Problem(self.path, message, line, col, ".".join(str(p) for p in loc) or None, severity)

    def forget_positions(self) -> None:
        """Let the file's text (kept to find positions) go, once every problem has been reported."""
        self.positions = Positions()


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


def load_file(path: Union[str, Path], display: Optional[str] = None) -> LoadResult:
    """One record file → a LoadResult with the record (if it validated) and every problem found."""
    path = Path(path)
    name = display or str(path)
    result = LoadResult(files=1)
    try:
        text, digest, stamp = read_text_and_digest(path)
        data, positions = parse_yaml(text, lazy=True)
    except YamlError as e:
        unreadable = e.message.startswith(("cannot read", "not valid UTF-8", "file is"))
        result.problems.append(Problem(name, e.message, e.line, e.col, unreadable=unreadable))
        return result
    if not isinstance(data, dict):
        line, col = positions.find(())
        result.problems.append(Problem(name, f"a record is a mapping of fields, got {_kind_of(data)}", line, col))
        return result
    report, problems, bad = validate_record(data, name, positions)
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


def validate_record(data: dict, name: str, positions) -> tuple[Optional[Report], list[Problem], set[Loc]]:
    """The record, the problems of its values, and where they are. Values left as the template's placeholders
    and values that are not valid are reported, then replaced by stand-ins until the rest validates, so that the
    checks can report the file's other problems too (the record comes back salvaged: see Loaded.salvaged).
    Returns no record only when no stand-ins make it valid."""
    problems: list[Problem] = []
    bad: set[Loc] = set()
    work = copy.deepcopy(data)
    for loc, value in _placeholders(data):
        line, col = positions.find(loc)
        problems.append(Problem(name, f"{shown(value)} is a placeholder from the template: replace it with the "
                                      f"record's own value, or delete the field if it is optional", line, col,
                                ".".join(map(str, loc))))
        bad.add(loc)
        _stand_in(work, loc, "placeholder")
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
                _stand_in(work, loc, kind)
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

    walk(str(path), ())
    return [path.joinpath(*parts) for parts in sorted(found)]


def load_paths(paths: Iterable[Union[str, Path]], progress: Any = None) -> LoadResult:
    """Files and folders → records and problems. Every file is read; a bad one never stops the others."""
    result = LoadResult()
    for p in paths:
        p = Path(p)
        if not p.exists() and not p.is_symlink():
            result.problems.append(Problem(str(p), "no such file or folder", unreadable=True))
            continue
        if p.is_dir() and p.suffix in (".yaml", ".yml"):
            result.problems.append(Problem(str(p), "is a folder, not a record file", unreadable=True))
            continue
        files = record_files(p)
        for f in progress(files) if progress else files:
            result.extend(load_file(f))
    return result


def load_vocabulary(path: Union[str, Path]) -> Vocabulary:
    """The vocabulary file → Vocabulary, or VocabularyError listing its problems."""
    path = Path(path)
    try:
        data, positions = parse_yaml(read_text(path))
    except YamlError as e:
        raise VocabularyError([Problem(str(path), e.message, e.line, e.col)])
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
    return Path(str(resources.files("kb").joinpath(name)))


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
