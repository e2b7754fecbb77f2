"""Strict YAML: a file's text → plain data (every scalar kept as the text written) and where each value starts.

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

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from . import codes
from .problems import shown

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_NODES = 100_000  # nodes built from one file, aliases counted each time they are followed
MAX_DEPTH = 64

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
    def __init__(self, code: str, message: str, line: Optional[int] = None, col: Optional[int] = None):
        super().__init__(message)
        self.code, self.message, self.line, self.col = code, message, line, col


@dataclass
class Positions:
    """Where each value (and each mapping key) of a loaded file starts, 1-based."""

    values: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)

    def top(self) -> "Positions":
        """The positions of the top-level fields only (what a record keeps once its problems are reported)."""
        return Positions({k: v for k, v in self.values.items() if len(k) <= 1},
                         {k: v for k, v in self.keys.items() if len(k) <= 1})

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

    def __init__(self, text: str, top: Optional[Positions] = None):
        self._text: Optional[str] = text
        self._found: Optional[Positions] = None
        self._top = top or Positions()  # the top-level fields' positions, kept from the first parse

    def top(self) -> Positions:
        return self._top

    def find(self, loc: Loc, prefer_key: bool = False) -> tuple[Optional[int], Optional[int]]:
        loc = tuple(loc)
        if self._found is None and len(loc) == 1 and (loc in self._top.keys if prefer_key else loc in self._top.values):
            return self._top.find(loc, prefer_key)  # a record's title, say: no second parse for it
        if self._found is None:
            self._found = parse_yaml(self._text or "")[1]
            self._text = None
        return self._found.find(loc, prefer_key)


class FilePositions:
    """Positions found when first asked for, by reading the file again (if it still holds the text that was
    read: same sha256) instead of keeping its text in memory: for the records of a large build, where a problem
    that needs a position is rare and the texts are as large as the records."""

    def __init__(self, path: Union[str, Path], digest: Optional[str], top: Positions):
        self._path, self._digest = Path(path), digest
        self._found: Optional[Positions] = None
        self._top = top

    def top(self) -> Positions:
        return self._top

    def find(self, loc: Loc, prefer_key: bool = False) -> tuple[Optional[int], Optional[int]]:
        loc = tuple(loc)
        if len(loc) == 1 and (loc in self._top.keys if prefer_key else loc in self._top.values):
            return self._top.find(loc, prefer_key)
        if self._found is None:
            try:
                text, digest, _ = read_text_and_digest(self._path)
                self._found = parse_yaml(text)[1] if digest == self._digest else Positions()
            except (OSError, YamlError):
                self._found = Positions()  # the file changed or went since: the problem is named without a line
        return self._found.find(loc, prefer_key)


def _mark(node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self, positions: bool = True) -> None:
        self.positions = Positions()
        self.depth = MAX_DEPTH if positions else 1  # positions recorded down to this depth
        self.active: set[int] = set()

    def build(self, node, loc: Loc = ()) -> Any:
        if len(loc) > MAX_DEPTH:
            raise YamlError(codes.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels", *_mark(node))
        if len(loc) <= self.depth:
            self.positions.values[loc] = _mark(node)
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            if tag == _PLAIN:
                return None if _NULL.match(node.value) else node.value
            if tag in (_QUOTED, "tag:yaml.org,2002:str", "!"):
                return node.value
            raise YamlError(codes.TAG, f"tag {shown(tag)} is not allowed (only plain values, lists and mappings)", *_mark(node))
        if tag not in _ALLOWED_TAGS:
            raise YamlError(codes.TAG, f"tag {shown(tag)} is not allowed (only plain values, lists and mappings)", *_mark(node))
        if id(node) in self.active:
            raise YamlError(codes.ALIAS_LOOP, "an alias refers to a value that contains it (a recursive structure)", *_mark(node))
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
                raise YamlError(codes.KEY_NOT_SCALAR, "a key must be a plain word, not a list or mapping", *_mark(key_node))
            key = key_node.value
            if key == "<<" and key_node.tag == _PLAIN:
                raise YamlError(codes.MERGE_KEY, "merge keys (<<) are YAML 1.1 only and not supported; write the fields out",
                                *_mark(key_node))
            if key in first:
                line, col = _mark(key_node)
                raise YamlError(codes.DUPLICATE_KEY, f"duplicate key {shown(key)}: first at line {first[key][0]}, again at line {line}",
                                line, col)
            first[key] = _mark(key_node)
            if len(loc) < self.depth:
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
        raise YamlError(codes.ALIAS_LOOP, "an alias refers to a value that contains it (a recursive structure)", *_mark(node))
    if isinstance(node, yaml.ScalarNode):
        return 1
    if len(active) > MAX_DEPTH:
        raise YamlError(codes.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels", *_mark(node))
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


def could_exceed(text: str, limit: int) -> bool:
    """Whether the text may hold more than `limit` nodes. A node starts at the top of the file or after a line
    break or one of these characters, and at most two nodes start at one place (a block mapping and its first
    key), so a text whose count is small enough holds fewer nodes (the count is cheap: C loops)."""
    return 2 * sum(text.count(c) for c in "\n,[{-:?&*") + 2 > limit


def compose(text: str):
    """YAML text → its node tree (None for an empty text), with scalars left unresolved. Raises YamlError with a
    1-based line and column."""
    try:
        if could_exceed(text, MAX_NODES):
            over = _count_events(text, MAX_NODES)
            if over is not None:
                raise YamlError(codes.TOO_MANY_VALUES, f"more than {MAX_NODES:,} values in one file (the limit for a record); "
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
            raise YamlError(codes.YAML_SYNTAX, what)
        raise YamlError(codes.YAML_SYNTAX, what, mark.line + 1, mark.column + 1)
    except yaml.reader.ReaderError as e:
        pos = e.position
        line = text.count("\n", 0, pos) + 1
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        raise YamlError(codes.YAML_SYNTAX, f"character {char} is not allowed: {e.reason}", line, pos - (text.rfind("\n", 0, pos) + 1) + 1)
    except yaml.YAMLError as e:
        raise YamlError(codes.YAML_SYNTAX, str(e).splitlines()[0] if str(e) else "invalid YAML")
    except RecursionError:
        raise YamlError(codes.TOO_DEEP, "nested too deeply to parse")
    return node


def parse_yaml(text: str, lazy: bool = False) -> tuple[Any, Union[Positions, LazyPositions]]:
    """YAML text → (data, positions). Raises YamlError with a 1-based line and column. `lazy`: the positions
    are found only when first asked for (by parsing the text again)."""
    node = compose(text)
    if node is None:
        raise YamlError(codes.EMPTY, "the file is empty", 1, 1)
    size = _expanded_size(node, {}, set())
    if size > MAX_NODES:
        raise YamlError(
            codes.TOO_MANY_VALUES, f"{size:,} values after following aliases, more than {MAX_NODES:,} (an alias bomb?); refusing to expand",
            *_mark(node),
        )
    builder = _Builder(positions=not lazy)
    data = builder.build(node)
    return data, LazyPositions(text, builder.positions) if lazy else builder.positions


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
            raise YamlError(codes.TOO_BIG, f"file is {size:,} bytes; the limit is {max_bytes:,}")
        raw = path.read_bytes()
    except OSError as e:
        link = " (a symbolic link that leads nowhere: a missing target or a loop)" if path.is_symlink() else ""
        raise YamlError(codes.CANNOT_READ, f"cannot read: {e.strerror or e}{link}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise YamlError(codes.NOT_UTF8, f"not valid UTF-8 (byte 0x{raw[e.start]:02x})", line, col)
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise YamlError(codes.NUL_BYTE, "contains a NUL byte", line, nul - (text.rfind("\n", 0, nul) + 1) + 1)
    return text, hashlib.sha256(raw).hexdigest(), (st.st_size, st.st_mtime_ns)
