"""Words, not substrings: text → normalised, stemmed tokens, and phrases matched as whole words.

"re-started" and "restarted" are one word, "monitors" and "monitoring" one stem; "tuned" is not found inside
"fine-tuned" ("finetun" is its own token), nor "retrained" inside "pretrained".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Optional

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")


# Words the stemmer folds into one of another sense, given a stem of their own: developers are people, not
# development ("lets developers cut the cost of deploying" is no development compute).
_APART = {"developer": "developer", "developers": "developer"}

_STEMS: dict[str, str] = dict(_APART)  # a plain dict: lru_cache's call took a quarter of reading a unit's words


def stem(word: str) -> str:
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= 100_000:
            _STEMS.clear()
            _STEMS.update(_APART)
        found = _STEMS[word] = _STEMMER.stemWord(word)
    return found


def stem_all(words: list[str]) -> list[str]:
    """[stem(w) for w in words], sooner: most words are stemmed already (then map looks them up in C, twice as
    soon as a comprehension; where one is not, only that one is stemmed by a call)."""
    try:
        return list(map(_STEMS.__getitem__, words))
    except KeyError:
        get = _STEMS.get
        return [get(w) or stem(w) for w in words]


# A word: letters of ASCII and digits, and mu, of "µP" (written with the micro sign or the Greek letter: read as
# the Greek one), which would be the word "p" without it. Punctuation that parts words is read as a word of its own,
# so that no phrase is found across it: "code, data and checkpoints" has no "code data", "optimizers, learning rate"
# no "optimal learning rate". (Not the brackets of a Markdown link: "the [Pile](...)" names the Pile.)
_WORD = re.compile(r"[a-z0-9\u00b5\u03bc]+(?:[-\u00ad\u2010\u2011][a-z0-9\u00b5\u03bc]+)*(?:\.[0-9]+)?"
                   r"|[,;:.](?=\s)|[()\u2014]")
# the same, cutting a text into what lies between words and the words (each word's start is the length before it)
_WORD_SPLIT = re.compile(f"({_WORD.pattern})")


_URL = re.compile(r"(?:https?://|www\.)[^\s)\]>\"']+")

# the letters besides A-Z and a-z that a case-blind pattern takes for them (re.IGNORECASE: İ ı ſ K)
_CASE_BLIND_ODD = re.compile("[\u0130\u0131\u017f\u212a]")


_WORD_CHAR = re.compile(r"\w")


def matches_at_word_starts(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    """Where `pattern` finds in text, as if each of its forms that starts with a letter or digit had a word
    boundary (\\b) before it. A pattern whose every form starts with a character lets the regular expression
    engine skip to where one of them stands (several times sooner on a long text than one that starts with \\b);
    the boundary is checked here, and past a match inside a word the search goes on from the next character."""
    out, at = [], 0
    search = pattern.search
    while (m := search(text, at)) is not None:
        a = m.start()
        if a and _WORD_CHAR.match(text, a) and _WORD_CHAR.match(text, a - 1):
            at = a + 1
            continue
        out.append(m.span())
        at = m.end()
    return out


def lowered(text: str, low: Optional[str] = None) -> Optional[str]:
    """text.lower() (or `low`, already made), where a pattern written in lowercase finds in it, without
    re.IGNORECASE, what it finds case-blind in text, at the same offsets: several times sooner on a long text.
    None where it would not: lowercasing moved the offsets, or text has a letter a case-blind pattern takes for
    an ASCII one."""
    low = text.lower() if low is None else low
    return low if len(low) == len(text) and not _CASE_BLIND_ODD.search(text) else None


def read_words(text: str) -> tuple[list[str], list[str]]:
    """The text's words (with the punctuation between them that no phrase crosses): lowercased, a hyphenated word
    joined ("re-started" is "restarted"), stemmed. A web address has no words ("arxiv.org/abs/..." names no
    dataset). With them, what offsets() needs to tell where each starts (asked only where a negation is looked
    for): the lowercased text, cut into what lies between words and the words as found in it."""
    low = text.lower()
    if "://" in low or "www." in low:
        low = _URL.sub(lambda m: " " * len(m.group()), low)
    pieces = _WORD_SPLIT.split(low)  # a match object for each word took three times as long
    found = pieces[1::2]
    words = found
    # in a word, a hyphen always stands between letters or digits: it goes
    if "\u00ad" in low or "\u2010" in low or "\u2011" in low:
        words = [w.translate(_HYPHENS) for w in found]
    elif "-" in low:
        words = [w.replace("-", "") if "-" in w else w for w in found]  # translate took five times as long
    if "\u00b5" in low:
        words = [w.replace("\u00b5", "\u03bc") for w in words]
    return stem_all(words), pieces


# a hyphen or soft hyphen inside a word joins it ("re-started", "fine-tuned", "13-gram", "GPU-hours")
_HYPHENS = str.maketrans("", "", "-\u00ad\u2010\u2011")


def offsets(pieces: list[str]) -> list[int]:
    """Where each word found by read_words starts, from its pieces (what lies before the first word, the word, what
    lies between it and the next, ...): the length of every piece before it, summed at once."""
    return list(accumulate(map(len, pieces[:-1])))[::2]


def tokens(text: str) -> list[str]:
    """The text's words, lowercased, hyphenated words joined, each stemmed."""
    return read_words(text)[0]


@dataclass(frozen=True)
class Phrase:
    text: str  # as written in the vocabulary
    stems: tuple[str, ...]


def phrase(text: str) -> Phrase:
    return Phrase(text, tuple(tokens(text)))


def joined(p: Phrase) -> Optional[Phrase]:
    """A phrase of several words as one hyphenated word ("gpu hours" as "GPU-hours", "node vetting" as
    "node-vetting"): read_words joins a hyphenated word, so the phrase's words would not be found in it."""
    if len(p.stems) < 2:
        return None
    stems = tuple(tokens("-".join(p.text.split())))
    return Phrase(p.text, stems) if len(stems) == 1 else None


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
    """Many phrases found in one pass over a text's words: phrases are filed by their first stem and, for a phrase
    of several words, its second, so each word looks up only the phrases that can start there, followed by the
    word after it (the auditor's thousands of cues, against every unit). A word that starts only phrases of several
    words ("the", "of") is passed over unless the next word is a second word of one of them."""

    def __init__(self):
        self._by_first: dict[str, list[tuple[tuple[str, ...], Any]]] = {}
        # made from _by_first when first scanned: each word that starts a phrase → the phrases of one word that
        # start with it; (first, second) → those and the phrases of several words that start with both. Each
        # (number of words, the words from the third on, payload), in the order the phrases were added.
        self._alone: dict[str, list[tuple[int, list[str], Any]]] = {}
        self._pairs: dict[tuple[str, str], list[tuple[int, list[str], Any]]] = {}
        self._made = True

    def add(self, p: Phrase, payload: Any) -> None:
        if p.stems:
            self._by_first.setdefault(p.stems[0], []).append((p.stems, payload))
            self._made = False

    def _make(self) -> None:
        self._alone, self._pairs = {}, {}
        for first, phrases in self._by_first.items():
            entries = [(len(stems), list(stems[2:]), stems[1] if len(stems) > 1 else None, payload)
                       for stems, payload in phrases]
            self._alone[first] = [(n, rest, payload) for n, rest, _, payload in entries if n == 1]
            for second in dict.fromkeys(s for _, _, s, _ in entries if s is not None):
                self._pairs[(first, second)] = [(n, rest, payload) for n, rest, s, payload in entries
                                                if n == 1 or s == second]
        self._made = True

    def scan(self, words: list[str]) -> list[tuple[Any, int]]:
        """Every (payload, position) of a phrase found in words, in the order of the text (at one position, in
        the order the phrases were added)."""
        if not self._made:
            self._make()
        out = []
        alone, pairs = self._alone, self._pairs
        last = len(words) - 1
        for i in [i for i, w in enumerate(words) if w in alone]:
            w = words[i]
            found = pairs.get((w, words[i + 1])) if i < last else None
            for n, rest, payload in alone[w] if found is None else found:
                if n <= 2 or words[i + 2:i + n] == rest:
                    out.append((payload, i))
        return out
