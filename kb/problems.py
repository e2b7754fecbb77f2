"""A problem found in a file: where, which (its code, see kb.codes), what, and how bad. Every stage reports these."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Optional

from . import codes


SHOWN_CHARS = 80  # how much of a value a message quotes
MAX_MESSAGE = 600  # no message is longer, whatever it quotes


def shown(value) -> str:
    """A value as a message quotes it: repr, cut to about SHOWN_CHARS characters (a 5 MB line is not echoed)."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS - 12]}…{text[-6:]} ({len(str(value)):,} characters)"


@dataclass(frozen=True)
class Problem:
    path: str
    code: str  # KB101, ... (kb.codes): what kind of problem, for programs; the message is for people
    message: str
    line: Optional[int] = None  # 1-based
    col: Optional[int] = None  # 1-based
    field: Optional[str] = None  # dotted path in the record, e.g. claims.3.value
    severity: str = "error"  # error | warning

    def __post_init__(self) -> None:
        if self.code not in codes.CODES:
            raise ValueError(f"unknown problem code {self.code!r}")
        if len(self.message) > MAX_MESSAGE:  # a safety net: messages quote values through shown()
            half = MAX_MESSAGE // 2
            object.__setattr__(self, "message", f"{self.message[:half]} … {self.message[-half:]}")

    @property
    def unreadable(self) -> bool:
        """The file cannot be read at all (missing, not UTF-8): commands exit 2 rather than 1."""
        return codes.unreadable(self.code)

    def location(self) -> str:
        loc = self.path
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        return loc

    def __str__(self) -> str:
        kind = "" if self.severity == "error" else f"{self.severity} "
        field = f" ({self.field})" if self.field else ""
        return f"{self.location()}: {kind}{self.code}: {self.message}{field}"

    def github(self) -> str:
        """A GitHub Actions workflow command, so the problem shows on the changed line of a pull request."""
        props = [f"file={_escape_prop(self.path)}"]
        if self.line is not None:
            props.append(f"line={self.line}")
        if self.col is not None:
            props.append(f"col={self.col}")
        props.append(f"title={self.code}")
        field = f" ({self.field})" if self.field else ""
        return f"::{self.severity} {','.join(props)}::{_escape_data(self.message + field)}"

    def as_dict(self) -> dict:
        return asdict(self)


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def under_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    """"1 file", "2 files"."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
