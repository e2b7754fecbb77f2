"""Words, not substrings: text → normalised, stemmed tokens, and phrases matched as whole words.

"re-started" and "restarted" are one word, "monitors" and "monitoring" one stem; "tuned" is not found inside
"fine-tuned" ("finetun" is its own token), nor "retrained" inside "pretrained".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")
# a hyphen or soft hyphen inside a word joins it ("re-started", "fine-tuned", "13-gram", "GPU-hours")
_JOIN = re.compile(r"(?<=[A-Za-z0-9])[-\u00ad\u2010\u2011](?=[A-Za-z0-9])")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return _STEMMER.stemWord(word)


_WORD = re.compile(r"[a-z0-9]+(?:[-\u00ad\u2010\u2011][a-z0-9]+)*(?:\.[0-9]+)?")


_URL = re.compile(r"(?:https?://|www\.)[^\s)\]>\"']+")

# the letters besides A-Z and a-z that a case-blind pattern takes for them (re.IGNORECASE: İ ı ſ K)
_CASE_BLIND_ODD = re.compile("[\u0130\u0131\u017f\u212a]")


def lowered(text: str, low: Optional[str] = None) -> Optional[str]:
    """text.lower() (or `low`, already made), where a pattern written in lowercase finds in it, without
    re.IGNORECASE, what it finds case-blind in text, at the same offsets: several times sooner on a long text.
    None where it would not: lowercasing moved the offsets, or text has a letter a case-blind pattern takes for
    an ASCII one."""
    low = text.lower() if low is None else low
    return low if len(low) == len(text) and not _CASE_BLIND_ODD.search(text) else None


def spans(text: str) -> list[tuple[str, int, int]]:
    """(stem, start, end) of each word of the text: lowercased, a hyphenated word joined ("re-started" is
    "restarted"), stemmed. A web address has no words ("arxiv.org/abs/..." names no dataset)."""
    out = []
    low = text.lower()
    if "://" in low or "www." in low:
        low = _URL.sub(lambda m: " " * len(m.group()), low)
    for m in _WORD.finditer(low):
        w = m.group()
        if "-" in w or "\u00ad" in w or "\u2010" in w or "\u2011" in w:
            w = _JOIN.sub("", w)
        out.append((stem(w), m.start(), m.end()))
    return out


def tokens(text: str) -> list[str]:
    """The text's words, lowercased, hyphenated words joined, each stemmed."""
    return [w for w, _, _ in spans(text)]


@dataclass(frozen=True)
class Phrase:
    text: str  # as written in the vocabulary
    stems: tuple[str, ...]


def phrase(text: str) -> Phrase:
    return Phrase(text, tuple(tokens(text)))


def find(phrase_: Phrase, words: list[str], start: int = 0) -> Optional[int]:
    """The index of the first occurrence of the phrase's stems, as consecutive words, in words; None if none."""
    n = len(phrase_.stems)
    if n == 0:
        return None
    first = phrase_.stems[0]
    i = start
    while True:
        try:
            i = words.index(first, i)
        except ValueError:
            return None
        if tuple(words[i:i + n]) == phrase_.stems:
            return i
        i += 1


class PhraseIndex:
    """Many phrases found in one pass over a text's words: phrases are filed by their first stem, so each word
    looks up only the phrases that can start there (the auditor's thousands of cues, against every unit)."""

    def __init__(self):
        self._by_first: dict[str, list[tuple[tuple[str, ...], Any]]] = {}

    def add(self, p: Phrase, payload: Any) -> None:
        if p.stems:
            self._by_first.setdefault(p.stems[0], []).append((p.stems, payload))

    def scan(self, words: list[str]) -> list[tuple[Any, int]]:
        """Every (payload, position) of a phrase found in words, in the order of the text."""
        out = []
        by_first = self._by_first
        for i, w in enumerate(words):
            candidates = by_first.get(w)
            if candidates:
                for stems, payload in candidates:
                    n = len(stems)
                    if n == 1 or tuple(words[i:i + n]) == stems:
                        out.append((payload, i))
        return out
