"""Formulas of derived claims: parsed by a small grammar, evaluated over numbers, never run as Python.

    formula := expr
    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := "-" unary | power
    power   := atom ("**" unary)?
    atom    := NUMBER | REF | FUNC "(" expr ("," expr)* ")" | "(" expr ")"

REF is a claim id of the same report (`snapshot-days`) or of another (`llama-3-405b/unexpected-interruptions`).
Ids contain hyphens, so subtraction needs spaces around the minus: `a - b`, while `a-b` is one id.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Union

from .values import ID

FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "min": min,
    "max": max,
    "abs": abs,
}
_ARITY = {"sqrt": (1, 1), "abs": (1, 1), "min": (2, 16), "max": (2, 16)}
MAX_DEPTH = 40

_ID = ID
_TOKEN = re.compile(
    rf"\s*(?:(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)|(?P<ref>{_ID}(?:/{_ID})?)|(?P<op>\*\*|[-+*/(),]))"
)


class FormulaError(ValueError):
    pass


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Ref:
    name: str  # "claim" or "report/claim"


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple


@dataclass(frozen=True)
class BinOp:
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Neg:
    operand: "Node"


Node = Union[Num, Ref, Call, BinOp, Neg]


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            bad = text[pos:].lstrip()[:20]
            raise FormulaError(f"unexpected {bad!r} at character {len(text) - len(text[pos:].lstrip()) + 1}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", len(self.text))

    def take(self, value: str) -> None:
        kind, v, at = self.peek()
        if v != value or kind != "op":
            found = repr(v) if kind != "end" else "the end"
            raise FormulaError(f"expected {value!r} at character {at + 1}, found {found}")
        self.i += 1

    def parse(self) -> Node:
        if not self.toks:
            raise FormulaError("empty formula")
        node = self.expr()
        kind, v, at = self.peek()
        if kind != "end":
            raise FormulaError(f"unexpected {v!r} at character {at + 1}")
        return node

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"nested deeper than {MAX_DEPTH} levels")

    def expr(self) -> Node:
        node = self.term()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.peek()[1]
            self.i += 1
            node = BinOp(op, node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "/"):
            op = self.peek()[1]
            self.i += 1
            node = BinOp(op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek()[:2] == ("op", "-"):
            self.i += 1
            self._nest()
            node = Neg(self.unary())
            self.depth -= 1
            return node
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.peek()[:2] == ("op", "**"):
            self.i += 1
            self._nest()
            node = BinOp("**", base, self.unary())
            self.depth -= 1
            return node
        return base

    def atom(self) -> Node:
        kind, v, at = self.peek()
        if kind == "num":
            self.i += 1
            return Num(float(v))
        if kind == "ref":
            self.i += 1
            if self.peek()[:2] == ("op", "("):
                if v not in FUNCTIONS:
                    raise FormulaError(f"unknown function {v!r} (allowed: {', '.join(FUNCTIONS)})")
                self.take("(")
                self._nest()
                args = [self.expr()]
                while self.peek()[:2] == ("op", ","):
                    self.i += 1
                    args.append(self.expr())
                self.take(")")
                self.depth -= 1
                low, high = _ARITY[v]
                if not low <= len(args) <= high:
                    raise FormulaError(f"{v}() takes {low if low == high else f'{low} or more'} argument(s), got {len(args)}")
                return Call(v, tuple(args))
            return Ref(v)
        if (kind, v) == ("op", "("):
            self.i += 1
            self._nest()
            node = self.expr()
            self.take(")")
            self.depth -= 1
            return node
        found = repr(v) if kind != "end" else "the end"
        raise FormulaError(f"expected a number, claim id or '(' at character {at + 1}, found {found}")


def parse(text: str) -> Node:
    """Formula text → syntax tree, or FormulaError saying where it went wrong."""
    if len(text) > 500:
        raise FormulaError("formula longer than 500 characters")
    return _Parser(text).parse()


def references(node: Node) -> list[str]:
    """The claim references in a formula, in order of first appearance."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Ref):
            if n.name not in out:
                out.append(n.name)
        elif isinstance(n, BinOp):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, Neg):
            walk(n.operand)
        elif isinstance(n, Call):
            for a in n.args:
                walk(a)

    walk(node)
    return out


def evaluate(node: Node, lookup: Callable[[str], float]) -> float:
    """The formula's value, with lookup giving each reference's number. Raises FormulaError on division by
    zero, overflow or a complex result."""
    try:
        result = _eval(node, lookup)
    except ZeroDivisionError:
        raise FormulaError("division by zero")
    except OverflowError:
        raise FormulaError("the result is too large")
    if isinstance(result, complex) or result != result or math.isinf(result):
        raise FormulaError("the result is not a finite real number")
    return result


def _eval(n: Node, lookup: Callable[[str], float]) -> float:
    if isinstance(n, Num):
        return n.value
    if isinstance(n, Ref):
        return float(lookup(n.name))
    if isinstance(n, Neg):
        return -_eval(n.operand, lookup)
    if isinstance(n, Call):
        args = [_eval(a, lookup) for a in n.args]
        if n.func == "sqrt" and args[0] < 0:
            raise FormulaError("sqrt of a negative number")
        return float(FUNCTIONS[n.func](*args))
    a, b = _eval(n.left, lookup), _eval(n.right, lookup)
    if n.op == "+":
        return a + b
    if n.op == "-":
        return a - b
    if n.op == "*":
        return a * b
    if n.op == "/":
        return a / b
    if a == 0 and b < 0:
        raise ZeroDivisionError
    r = a**b  # floats: a huge power raises OverflowError instead of running for ever
    if isinstance(r, complex):
        raise FormulaError("a negative number to a fractional power")
    return r
