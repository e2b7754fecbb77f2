"""The fast way to read a record file: rapidyaml, for the files it reads exactly as kb.yaml12 does; every other
file goes to kb.yaml12.

kb.yaml12 composes libyaml's nodes through PyYAML, about 30× `json.loads` of the same data and most of a cold
build's reading. Here rapidyaml (C++) parses the text and writes it out as JSON, and `json.loads` reads that back
with every number kept as the text written, so the data is what kb.yaml12 makes of the file: every scalar the text
written, only the YAML 1.2 null spellings None (benchmarks/options.py measures it: `parse`).

The fast way is taken only for a file with nothing unusual in it; any doubt sends the file to kb.yaml12, which
reads it, and words its problems with their lines, exactly as before. Declined:

- before parsing: characters libyaml refuses or reads as line breaks (tabs and carriage returns among them),
  document markers and directives; where a value can start, a tag, an anchor, a reserved indicator, a complex key,
  or `]` `}` `,`; a list or mapping in brackets that is not simple and on one line; a block text's header other
  than `|` `>` with `-` or `+` (a comment after it too); a quoted key; a character escaped by its number; a colon
  past libyaml's key length; lines indented so deep that the nesting could near kb.yaml12's limit. Said of prose
  and quoted text too (`a, & b`): such a file is only read the slower way;
- a text that could hold more than half kb.yaml12's limit of values (decided by counting characters, before
  rapidyaml builds a tree: kb.yaml12 refuses such a file early, in little memory);
- rapidyaml's refusal of the text; a top that is not one mapping (a list, a scalar, several documents);
- what the JSON would blur: an alias (rapidyaml keeps `*x` as text), a plain `~`, `Null` or `NULL` (None) against a
  quoted one (text), a plain `true`/`false` (JSON literals), an empty text, a float its JSON may have written with
  a 0 added (`.5` → `0.5`, `5.` → `5.0`) where the source holds the shorter form, a nan/inf it renamed, `<<`;
- a duplicate key; a top-level key that is not a plain word at the start of its line.

A file read the fast way gets its positions from kb.yaml12 when a problem first asks for one (LazyPositions parses
the text again); only the top-level fields' positions are found here, from the text, where libyaml puts them.
tests/test_parse_paths.py holds both ways to the same data, positions and problems over every record, every
hostile case, a generated corpus, targeted cases and thousands of generated and mutated texts.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from typing import Any, Callable, Optional, Union

from .yaml12 import MAX_NODES, LazyPositions, Positions, could_exceed, parse_yaml

try:
    import ryml
    from ryml import _ryml
except ImportError:  # no wheel for this platform: every file is read by kb.yaml12
    ryml = None

# The checks before parsing run on the text with a line break put in front ("\n" + text), so that the start of
# every line, the first included, is found as a literal "\n" (the fast kind of regular-expression search).

# Anything libyaml does not read as one printable character: C0 and C1 controls (tab and CR among them), DEL, the
# YAML 1.1 line breaks NEL, LS and PS, surrogates, a byte-order mark inside the text, U+FFFE and U+FFFF.
# (Looked for among the characters left once the UTF-8 bytes of printable ASCII are deleted: a C loop.)
_ODD_CHARACTER = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_PRINTABLE_ASCII = b"\n" + bytes(range(0x20, 0x7f))
_DOCUMENT = re.compile(r"\n(?:---|\.\.\.|%)")  # document markers, directives
# A line whose indentation (spaces and `- `) reaches this column: a block list or mapping starts no further right
# than its line's indentation, and each level of block nesting but an unindented list moves one column right, so
# below it the nesting stays far from kb.yaml12's MAX_DEPTH (lists in brackets add at most two levels here).
_DEEP = re.compile(r"\n[ -]{24}")
# Characters that mean something where a value starts (found here, then judged by what comes before them).
INDICATORS = "!&@`%?|>{}"
# `]`, `,` or `}` where a block value starts: rapidyaml reads it as text, libyaml refuses it.
_CLOSERS_AT_START = (re.compile(r"\n *[\],}]"), re.compile(r": +[\],}]"), re.compile(r"- +[\],}]"))
_LONG_KEY = re.compile(rf"\n[^\n]{{{1024}}}[^\n]*:")  # a colon past column 1024: libyaml refuses a key so long
# Lists and mappings in brackets: read the fast way only if simple and ended on their line (a comment may follow):
# plain words (no `:` or `#` in them, not starting with an indicator) or quoted texts, in a list, or as the values of
# a mapping of plain keys, with lists one deep in it.
_FLOW_QUOTED = r"'[^'\n]*(?:''[^'\n]*)*'|\"[^\"\\\n]*(?:\\[^\n][^\"\\\n]*)*\""
_FLOW_PLAIN = r"(?:[^\s\[\]{},:#'\"!&*@`%|>?-]|-(?=[^\s\[\]{},:#]))(?:[^\n\[\]{},:#]*[^\s\[\]{},:#])?"
_FLOW_SCALAR = f"(?:{_FLOW_QUOTED}|{_FLOW_PLAIN})"
_FLOW_LIST_REST = rf" *(?:{_FLOW_SCALAR}(?: *, *{_FLOW_SCALAR})*)? *\]"  # after the `[`
_FLOW_LIST = rf"\[{_FLOW_LIST_REST}"
_FLOW_ENTRY = rf"[A-Za-z_][\w-]*: +(?:{_FLOW_SCALAR}|{_FLOW_LIST})"
_LINE_END = r" *(?: #[^\n]*)?(?=\n|$)"
_SIMPLE_MAP = re.compile(rf"\{{ *(?:{_FLOW_ENTRY}(?: *, *{_FLOW_ENTRY})*)? *\}}{_LINE_END}")
_ODD_LIST = re.compile(rf"\[(?<=[ \n]\[)(?!{_FLOW_LIST_REST}{_LINE_END})")  # a `[` after a space that is not simple
_BLOCK_HEADER = re.compile(r"[|>][-+]? *(?=\n|$)")  # no comment: rapidyaml reads `| #- c` as `|-`
# A quoted key (a quote then `: `): rapidyaml takes one that runs over two lines, which libyaml refuses.
_QUOTED_KEY = re.compile(r"[\"']:(?=[ \n]|$)")
# A character given by its number in a double-quoted text: libyaml refuses some (a lone surrogate) that rapidyaml
# takes. Said of any backslash followed by x, u or U.
_ESCAPED_NUMBER = re.compile(r"\\[xuU]")
VALUE_START = "\n-?:,[{"  # what comes before a value's start (spaces aside): a line break, indicators, brackets
BLOCK_VALUE_START = "\n-?:"

# In rapidyaml's JSON: what it would not tell apart from other text (an alias, a plain null spelling other than
# `null` and the empty value, an empty text, renamed nan/inf, the merge key), and a plain true/false.
_BLURRED = re.compile(r'"(?:\*|~"|Null"|NULL"|\.nan"|\.inf"|-\.inf"|<<"|")')
_LEADING_DOT = re.compile(r"\.[0-9](?:(?<=[ \[,\n]\.[0-9])|(?<=[ \[,\n]-\.[0-9]))")  # `.5` where a value can start
_LITERAL = re.compile(r"true(?=[,\]}\n]|$)(?<=[\[, \n]true)|false(?=[,\]}\n]|$)(?<=[\[, \n]false)")

# The lines that start at column 1: a top-level key (a plain word), a list's entry, or anything else.
_LINE_START = re.compile(r"\n(?:([A-Za-z_][\w-]*):(?=[ \n]|$)|(-)(?=[ \n]|$)|[^ \n#])")


class _Declined(Exception):
    """The fast way does not take this file (kb.yaml12 reads it); the message says why."""


def parse_record(text: str) -> tuple[Any, Union[Positions, LazyPositions]]:
    """A record file's text → (data, positions), as kb.yaml12.parse_yaml(text, lazy=True) gives them, the fast
    way where it reads the file exactly. Raises YamlError (from kb.yaml12) for a file that is not valid."""
    fast = read_fast(text)
    if fast is not None:
        return fast
    return parse_yaml(text, lazy=True)


def read_fast(text: str) -> Optional[tuple[dict, LazyPositions]]:
    """(data, positions) the fast way, or None where the file is left to kb.yaml12."""
    try:
        return _read(text)
    except _Declined:
        return None


def declined(text: str) -> Optional[str]:
    """Why the fast way leaves a text to kb.yaml12, or None if it takes it (for the benchmark and the tests)."""
    try:
        _read(text)
    except _Declined as e:
        return str(e)
    return None


def _read(text: str) -> tuple[dict, LazyPositions]:
    if ryml is None:
        raise _Declined("rapidyaml is not installed")
    if could_exceed(text, MAX_NODES // 2):  # before rapidyaml builds its tree of a huge file (memory)
        raise _Declined("near the limit of values")  # kb.yaml12 counts, and refuses early, as it always did
    src = "\n" + text
    _check_text(text, src)
    data = _data(text)
    return data, LazyPositions(text, _top_positions(src, data))


def _line(src: str, at: int) -> int:
    return src.count("\n", 0, at + 1)


def _before(src: str, at: int) -> str:
    """The character before position `at`, spaces skipped (src starts with a line break)."""
    at -= 1
    while src[at] == " ":
        at -= 1
    return src[at]


def _check_text(text: str, src: str) -> None:
    try:
        rest = text.encode().translate(None, _PRINTABLE_ASCII)
    except UnicodeEncodeError:  # a lone surrogate
        raise _Declined("a character that is not Unicode")
    odd = _ODD_CHARACTER.search(rest.decode()) if rest else None
    if odd:
        at = text.find(odd.group())
        raise _Declined(f"character U+{ord(odd.group()):04X} at line {_line(src, at + 1)}")
    for first_end, what in _TEXT_RULES:
        end = first_end(src)
        if end is not None:
            raise _Declined(f"{what} at line {_line(src, end - 1)}")
    maps: list[tuple[int, int]] = []  # where the simple mappings in brackets are (their lists are checked there)
    block_text = False
    for at, c in _indicators(src):
        before = _before(src, at)
        if before not in VALUE_START or (c == "}" and before not in BLOCK_VALUE_START):
            continue  # inside a text
        if c == "{":
            simple = _SIMPLE_MAP.match(src, at) if before in "\n-:" else None
            if simple:
                maps.append((at, simple.end()))
                continue
        elif c in "|>":
            if before in BLOCK_VALUE_START and _BLOCK_HEADER.match(src, at):
                block_text = True
                continue
        elif c == "?" and src[at + 1:at + 2] not in (" ", "\n", ""):
            continue  # `?x` is text
        raise _Declined(f"{c!r} where a value starts, at line {_line(src, at)}")
    for m in _ODD_LIST.finditer(src):
        at = m.start()
        if _before(src, at) in VALUE_START and not any(a < at < b for a, b in maps):
            raise _Declined(f"a list in brackets that is not simple or not on one line, at line {_line(src, at)}")
    if block_text and not text.endswith("\n"):
        raise _Declined("a block text in a file that does not end with a line break")  # rapidyaml adds one


def _quoted_key(src: str) -> Optional[int]:
    """Where _QUOTED_KEY's first match in src ends, found sooner: a text's quotes are many (a third of checking a
    long record's text went to trying each), its quoted keys none, and a quote then a colon is seldom there."""
    first = None
    for pair in ('":', "':"):
        at = src.find(pair)
        while at >= 0 and src[at + 2:at + 3] not in (" ", "\n", ""):
            at = src.find(pair, at + 1)
        if at >= 0 and (first is None or at < first):
            first = at
    return None if first is None else first + 2


def _end_of(pattern: re.Pattern) -> Callable[[str], Optional[int]]:
    return lambda src: m.end() if (m := pattern.search(src)) else None


# What sends a file to libyaml, found in its text: each rule gives where its first match ends (or None).
_TEXT_RULES = ((_end_of(_DOCUMENT), "a document marker or directive"), (_end_of(_DEEP), "indented 24 columns or more"),
               *((_end_of(closer), "a value that starts with ], } or ,") for closer in _CLOSERS_AT_START),
               (_end_of(_ESCAPED_NUMBER), "a character escaped by its number"), (_quoted_key, "a quoted key"),
               (_end_of(_LONG_KEY), "a colon past column 1024 (libyaml refuses a key so long; rapidyaml takes it)"))


def _indicators(src: str):
    """(position, character) of each indicator in the text, in order (each looked for only if the text has it)."""
    found = []
    for c in INDICATORS:
        at = src.find(c)
        while at >= 0:
            found.append((at, c))
            at = src.find(c, at + 1)
    return sorted(found)


@contextmanager
def _quiet_stderr():
    """rapidyaml writes its own message about a text it refuses to the process's stderr before raising; kb.yaml12
    words the problem, so that message goes to /dev/null (file descriptor 2 points there around the call; kb reads
    files in one thread)."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to protect
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
        finally:
            os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _data(text: str) -> dict:
    try:
        with _quiet_stderr():
            tree = ryml.Tree()
            _ryml.parse_csubstr(text, tree)
            root = _ryml.Tree_root_id(tree)
            kind = _ryml.Tree_type(tree, root)
            if kind & (ryml.STREAM | ryml.DOC) or not kind & ryml.MAP:
                raise _Declined("not one mapping")  # several documents, a list, nothing: kb.yaml12 says what
            if 2 * _ryml.Tree_size(tree) > MAX_NODES:  # cannot happen after could_exceed; kept as the rule
                raise _Declined("near the limit of values")
            # into a buffer of ours: emit_json_malloc's buffer is never freed (40 KB leaked a record)
            buf = bytearray(ryml.compute_json_length(tree, root))
            js = bytes(ryml.emit_json_in_place(tree, buf, root)).decode("utf-8")
    except _Declined:
        raise
    except Exception as e:  # rapidyaml refused the text (or could not be given it): kb.yaml12 says why
        raise _Declined(f"rapidyaml: {type(e).__name__}")
    blurred = _BLURRED.search(js)
    if blurred:
        raise _Declined(f"{blurred.group()}… in the JSON")
    if ("true" in js or "false" in js) and _LITERAL.search(js):
        raise _Declined("a plain true or false")  # JSON literals; kb.yaml12 keeps the text
    added: list[str] = []  # floats the JSON may have written with a 0 added

    def number(written: str) -> str:
        if written[:2] == "0." or written[:3] == "-0." or written[-2:] == ".0":
            added.append(written)
        return written

    try:
        data = json.loads(js, parse_int=str, parse_float=number, parse_constant=_constant, object_pairs_hook=_mapping)
    except ValueError as e:  # not JSON after all (`+1`, `00.5`, a control character written by an escape)
        raise _Declined(f"JSON: {e}")
    if added:
        _check_floats(set(added), text)
    return data


def _check_floats(floats: set, source: str) -> None:
    """rapidyaml's JSON writes `.5` as `0.5` and `5.` as `5.0`: a float that could have been so written is declined
    if the source holds the shorter form as a whole number after a space, `[`, `,` or a line break (where a plain
    value can start; in prose too)."""
    shorter = []
    leading_dot = None
    for text in floats:
        if text[:2] == "0." or text[:3] == "-0.":
            if leading_dot is None:
                leading_dot = bool(_LEADING_DOT.search(source))  # once: seldom any
            if leading_dot:
                shorter.append((text, text[1:] if text[0] == "0" else "-" + text[2:]))  # 0.5 ← .5, -0.5 ← -.5
        if text[-2:] == ".0":
            shorter.append((text, text[:-1]))  # 5.0 ← 5.
    for text, written in shorter:
        for start in " [,\n":
            at = source.find(start + written)
            while at >= 0:
                end = at + 1 + len(written)
                if end == len(source) or source[end] not in "0123456789":
                    raise _Declined(f"{written} written (rapidyaml's JSON says {text})")
                at = source.find(start + written, at + 1)


def _constant(text: str) -> str:
    raise _Declined(text)  # NaN, Infinity: not written by rapidyaml's JSON unless the text was odd


def _mapping(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _Declined("a duplicate key")  # kb.yaml12 names both lines
    return d


def _top_positions(src: str, data: dict) -> Positions:
    """Where the top-level fields start, where libyaml puts them: each key at the start of its line; its value
    where its text starts, on the key's line or on the next line with content (if that is indented or a `- `
    entry), else just after the colon. Declined unless every line that starts at column 1 is a plain-word key, a
    `- ` entry or a comment, and the keys found are the data's keys, in order."""
    positions = Positions()
    keys: list[str] = []
    line, counted = 0, 0
    for m in _LINE_START.finditer(src):
        line += src.count("\n", counted, m.start() + 1)
        counted = m.start() + 1
        name = m.group(1)
        if name is None:
            if m.group(2) is None:
                raise _Declined(f"line {line} starts with no plain key")
            continue
        keys.append(name)
        positions.keys[(name,)] = (line, 1)
        positions.values[(name,)] = _value_start(src, m.end(), line, m.start() + 1)
    if not keys or keys != list(data):
        raise _Declined("the top-level keys found in the text are not the data's")
    positions.values[()] = positions.keys[(keys[0],)]
    return positions


def _value_start(src: str, after_colon: int, line: int, line_start: int) -> tuple[int, int]:
    n = len(src)
    i = after_colon
    while i < n and src[i] == " ":
        i += 1
    if i < n and src[i] not in "\n#":
        return line, i - line_start + 1
    later = line
    while True:  # the value starts on a later line: blank lines and comments skipped
        nl = src.find("\n", i)
        if nl < 0:
            break
        i = nl + 1
        later += 1
        j = i
        while j < n and src[j] == " ":
            j += 1
        if j < n and src[j] not in "\n#":
            if j > i or src[i] == "-":  # indented, or a list's entry at column 1 (`_LINE_START` saw `- `)
                return later, j - i + 1
            break
    return line, after_colon - line_start + 1  # no value: libyaml marks the empty scalar just after the colon
