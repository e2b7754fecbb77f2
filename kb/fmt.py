"""`kb fmt`: records in one canonical key order and style, so diffs stay small.

The formatter moves text, it never re-serialises values: each key's block (its value, and the comment lines
right above it) is cut from the file and put back in the canonical order, so values and comments come out
exactly as written. Canonical order is the order of the fields in the models (id, title, organization, ...;
for a claim id, statement, value, bound, unit, source, ...), disclosures in the vocabulary's omission order,
unknown keys last in their order. Style: LF line endings, no trailing spaces, at most one blank line in a
row, one final newline, and the editor modeline on the first line. Flow mappings (`{status: partial}`) are
left as they are.
"""

from __future__ import annotations

import re
from typing import Optional

import yaml

from .yaml12 import compose
from .model import Claim, Disclosure, Report, Source

MODELINE = "# yaml-language-server: $schema=../schema/record-v1.schema.json"
_CLAIM_ORDER = ["id", "statement", "value", "bound", "unit", "source", "locator", "quote", "quote_kind", "no_quote",
                "verified", "status", "formula", "tolerance", "note", "patterns", "topics"]


def _with_rest(order: list[str], model) -> list[str]:
    """The given order, then any other field of the model (a new optional field) in model order."""
    return order + [f for f in model.model_fields if f not in order]


ORDERS = {
    (): list(Report.model_fields),
    ("sources", "*"): _with_rest(["id", "title", "url", "path", "kind", "version", "retrieved", "sha256", "checked"],
                                 Source),
    ("claims", "*"): _with_rest(_CLAIM_ORDER, Claim),
    ("disclosures", "*"): list(Disclosure.model_fields),
}


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


class _Formatter:
    def __init__(self, text: str, omission_order: list[str]):
        self.text = text
        self.starts = _line_starts(text)
        self.omission_order = omission_order

    def line_start(self, node) -> int:
        return self.starts[node.start_mark.line]

    def attach_comments(self, pos: int, floor: int) -> int:
        """Move pos up over the comment lines directly above it (not past floor, not over a blank line)."""
        line = self.starts.index(pos)
        while line > 0 and self.starts[line - 1] >= floor:
            prev = self.text[self.starts[line - 1]:self.starts[line]].strip()
            if not prev.startswith("#"):
                break
            line -= 1
        return self.starts[line]

    def order_for(self, path: tuple) -> Optional[list[str]]:
        generic = tuple("*" if i % 2 else p for i, p in enumerate(path))
        if path == ("disclosures",):
            return self.omission_order
        return ORDERS.get(generic if path else ())

    def render(self, node, lo: int, hi: int, path: tuple) -> str:
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            return self.mapping(node, lo, hi, path)
        if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
            return self.sequence(node, lo, hi, path)
        return self.text[lo:hi]

    def split(self, nodes, lo: int, hi: int) -> tuple[str, list[tuple[int, int]]]:
        starts = [self.line_start(n) for n in nodes]
        starts = [starts[0]] + [self.attach_comments(s, starts[i]) for i, s in enumerate(starts[1:])]
        chunks = [(s, starts[i + 1] if i + 1 < len(starts) else hi) for i, s in enumerate(starts)]
        return self.text[lo:starts[0]], chunks

    def sequence(self, node, lo: int, hi: int, path: tuple) -> str:
        prefix, chunks = self.split(node.value, lo, hi)
        out = [prefix]
        for (a, b), item in zip(chunks, node.value):
            out.append(self.render(item, a, b, path + ("*",)))
        return "".join(out)

    def mapping(self, node, lo: int, hi: int, path: tuple) -> str:
        keys = [k for k, _ in node.value]
        prefix, chunks = self.split(keys, lo, hi)
        names = [k.value for k in keys]
        rendered = [self._render_pair(k, v, a, b, path) for (a, b), (k, v) in zip(chunks, node.value)]
        order = self.order_for(path)
        if order is None:
            return prefix + "".join(rendered)
        rank = {name: i for i, name in enumerate(order)}
        idx = sorted(range(len(names)), key=lambda i: (rank.get(names[i], len(order)), i))
        if idx == list(range(len(names))):
            return prefix + "".join(rendered)
        # A mapping that is a list item carries the "- " on its first key's line: move it to the new first key.
        first_line = self.text[self.starts[keys[0].start_mark.line]:keys[0].start_mark.index]
        dash = first_line.rstrip().endswith("-") or "- " in first_line
        # Blank lines after the mapping stay after it, wherever its last key moves.
        body = "".join(rendered)
        tail = body[len(body.rstrip("\n")) + 1:] if body.endswith("\n") else ""
        rendered = [r.rstrip("\n") + "\n" for r in rendered]
        pieces = [rendered[i] for i in idx]
        if dash:
            old_first = rendered[0]
            col = keys[0].start_mark.column
            line_end = old_first.find("\n")
            first = old_first[:line_end] if line_end >= 0 else old_first
            undashed = " " * col + first[col:]
            pieces[idx.index(0)] = self._ensure_newline(undashed + old_first[len(first):])
            new_first = pieces[0]
            j = self._key_line_offset(new_first)
            line = new_first[j:]
            pieces[0] = new_first[:j] + line[:col - 2] + "- " + line[col:]
        return prefix + "".join(pieces) + tail

    def _render_pair(self, k, v, a: int, b: int, path: tuple) -> str:
        if isinstance(v, (yaml.MappingNode, yaml.SequenceNode)) and not v.flow_style and v.value:
            inner_lo = self.line_start(v.value[0][0] if isinstance(v, yaml.MappingNode) else v.value[0])
            inner_lo = min(inner_lo, b)
            if inner_lo > a:
                return self.text[a:inner_lo] + self.render(v, inner_lo, b, path + (k.value,))
        return self.text[a:b]

    def _key_line_offset(self, chunk: str) -> int:
        """Offset in a chunk of its key's line (after the comment lines attached above it)."""
        pos = 0
        for line in chunk.splitlines(keepends=True):
            if not line.strip().startswith("#"):
                return pos
            pos += len(line)
        return 0

    @staticmethod
    def _ensure_newline(s: str) -> str:
        return s if s.endswith("\n") else s + "\n"


def format_text(text: str, omission_order: Optional[list[str]] = None) -> str:
    """A record's text in canonical order and style. Raises YamlError when the text is not valid YAML."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    node = compose(text)
    if node is not None:
        text = _Formatter(text, omission_order or []).render(node, 0, len(text), ())
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    if not text.startswith("# yaml-language-server:"):
        text = MODELINE + "\n" + text
    return text
