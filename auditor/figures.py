"""Typed figures: a number with what it counts ("40,000 GPU-hours" is compute, "13-gram" an n-gram length, "1.2%"
a percentage, "four learning rates" a count of candidates), so each part of an omission can say which figures
give it. Years, citation markers, section numbers and a model's size on its own are never figures of anything.

The words that type a figure are data: the vocabulary's `figure_kinds`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .words import lowered, matches_at_word_starts, stem, stem_all

_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
                 "fifty": 50, "hundred": 100, "dozen": 12, "dozens": 24, "hundreds": 200, "thousands": 2000,
                 "several": 3, "multiple": 2, "numerous": 5}
_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "mn": 1e6, "b": 1e9, "billion": 1e9, "bn": 1e9,
           "t": 1e12, "trillion": 1e12}
# What is not a figure: citation markers, section and table numbers, footnote markers, years. Those that start with a
# letter or a digit start a word.
_NUMBERED = r"\.?\s*[a-z]?\d+(?:\.\d+)*"  # "Sec. 3.2", "Table A1"
_YEAR = r"\d\d[a-z]?\b(?!\s*(?:gpus?|tokens|h100|a100|runs|hours|steps))"
_NOT_FIGURE_FORMS = [r"\[\d+(?:\s*[,–-]\s*\d+)*\]", r"<sup>.*?</sup>", r"\$\^\{?[\d,]+\}?\$", "§" + _NUMBERED] + [
    word + _NUMBERED for word in ("sec(?:tion)?s?", "tables?", "fig(?:ure)?s?", "appendix", "app", "eq(?:uation)?",
                                  "chapter", "step")] + ["19" + _YEAR, "20" + _YEAR]
# The definition, case-blind; compiled where it is used, seldom (where lowercasing moves the offsets): compiling it
# took 2 ms of every `audit FILE`.
_NOT_FIGURES = "|".join(("" if f[0] in "\\<$§" else r"\b") + f for f in _NOT_FIGURE_FORMS)
# The same forms for lowercased text (lowered), without the word boundary before them: matches_at_word_starts
# checks it (four times sooner on a long text).
_NOT_FIGURES_LOWER = re.compile("|".join(_NOT_FIGURE_FORMS))
# A number, in digits or in words (case-blind): the definition, whose halves are scanned apart
_NUMBER = (
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:\s?[eE]\s?[-−+]?\d+)?"
    r"|\d+(?:\.\d+)?\s?(?:×|x|\\times)\s?10\s?\^?\s?\{?[-−]?\d+\}?)"
    r"(?P<pct>\s?\\?%)?"
    r"(?P<scale>\s?(?:[KMBT]\b|thousand\b|million\b|billion\b|trillion\b))?"
    r"|\b(?P<word>one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty"
    r"|dozens?|hundreds|thousands|several|multiple|numerous)\b")
# _NUMBER's two halves, scanned apart: its case-blind alternation of number words, tried at every character, was
# two thirds of the scan for numbers, itself 40% of reading a long text's figures. Digits keep their pattern; number
# words are found in the lowercased text, then matched again in place (numbers()). The groups each half lacks are
# there, never matching.
_DIGITS = re.compile(_NUMBER.split(r"|\b(?P<word>")[0] + r"(?P<word>(?!))?", re.IGNORECASE)
_WORDS_AS = r"\b(?P<word>" + _NUMBER.split(r"|\b(?P<word>")[1] + r"(?P<num>(?!))?(?P<pct>(?!))?(?P<scale>(?!))?"
_NUMBER_WORDS_LOWER = re.compile(_WORDS_AS)
_NUMBER_WORDS = re.compile(_WORDS_AS, re.IGNORECASE)


def numbers(text: str, low: str) -> list:
    """re.finditer(_NUMBER, text, re.IGNORECASE), sooner (`low`: text.lower()). A number word never starts inside a
    number in digits (nor at the same place), so the two halves' matches, in the order of the text, are the whole's."""
    if lowered(text, low) is not None:
        words = [_NUMBER_WORDS.match(text, m.start()) for m in _NUMBER_WORDS_LOWER.finditer(low)]
    else:
        words = list(_NUMBER_WORDS.finditer(text))
    found = _digits(text)
    if words:
        found = sorted(found + words, key=lambda m: m.start())
    return found


_DIGIT_RUN = re.compile(r"\d+")
_WORD_OR_POINT = re.compile(r"[\w.]")


def _digits(text: str) -> list:
    """_DIGITS.finditer(text), sooner: a number in digits starts a run of digits that follows no letter, digit or
    point (the lookbehind that starts _DIGITS), and runs of digits are found at once."""
    out, at = [], 0
    match = _DIGITS.match
    for run in _DIGIT_RUN.finditer(text):
        s = run.start()
        if s < at or (s and _WORD_OR_POINT.match(text, s - 1)):
            continue
        m = match(text, s)
        if m is not None:
            out.append(m)
            at = m.end()
    return out


_MATH_NUMBER = re.compile(r"\$((?:\\[a-z]+\s*|[~\s])*)(\d[\d.,]*\s*(?:\\?%)?)\$")
# an n-gram's length, in words or tokens, or in characters where it is a substring matched ("50-character substring")
_NGRAM = re.compile(r"\b(\d+)\s?-?\s?(?:grams?|token (?:n-?grams?|spans?|overlaps?)|char(?:acter)?s? (?:sub)?strings?)\b"
                    r"|\bn\s?=\s?(\d+)\b", re.IGNORECASE)


_OR_MORE = re.compile(r"^\s*%?\s*(?:or|and)\s+(?:more|fewer|less|higher|lower|above|below|greater)\b", re.IGNORECASE)
_RELATIVE = re.compile(r"^\s*(?:more|fewer|less|higher|lower|faster|slower|better|worse|larger|smaller|longer|"
                       r"shorter|improvement|speedup|speed-up|reduction|increase|decrease)\b", re.IGNORECASE)
_SIZED = {"model", "paramet", "param", "dens", "moe", "proxi", "transform"}
_CANDIDATES = re.compile(r"^\s*(?:different\s+|candidate\s+|distinct\s+)?(?:learning[- ]rates|batch[- ]sizes|"
                         r"values|settings|configurations|seeds|warmup lengths|schedules|model sizes|sizes)\b",
                         re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    kind: str  # compute, duration, hardware, tokens, params, percent, change, count, ngram, threshold, rate, number
    text: str
    value: Optional[float]
    start: int
    end: int
    shown: str = ""  # as written, with the words that typed it ("40,000 GPU-hours")

    @property
    def label(self) -> str:
        return self.shown or self.text


def _masked(text: str) -> tuple[str, str]:
    """The text with what is not a figure blanked out (same offsets), and that lowercased. The blanks are found in
    the lowercased text where it keeps the offsets: the case-blind pattern took twice as long."""
    low = text.lower()
    aligned = lowered(text, low)
    found = (matches_at_word_starts(_NOT_FIGURES_LOWER, aligned) if aligned is not None
             else [m.span() for m in re.finditer(_NOT_FIGURES, text, re.IGNORECASE)])
    if not found:
        return text, low
    pieces, lows, last = [], [], 0
    for a, b in found:
        pieces += (text[last:a], " " * (b - a))
        lows += (low[last:a], " " * (b - a))
        last = b
    pieces.append(text[last:])
    lows.append(low[last:])
    masked = "".join(pieces)
    return masked, ("".join(lows) if aligned is not None else masked.lower())


class FigureReader:
    """Reads typed figures with the vocabulary's figure kinds: kind → the stemmed words that may follow a number
    (or come just before it, for thresholds)."""

    def __init__(self, kinds: dict[str, list[str]]):
        self.after: list[tuple[str, tuple[str, ...]]] = []
        for kind, words in kinds.items():
            if kind == "threshold":
                continue
            for w in words:
                self.after.append((kind, tuple(stem(x) for x in re.findall(r"[a-z0-9$]+", w.lower().replace("-", "")))))
        self.after.sort(key=lambda kv: -len(kv[1]))  # "gpu hours" before "gpu"
        self._after_by_first: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for kind, words in self.after:
            if words:
                self._after_by_first.setdefault(words[0], []).append((kind, words))
        self.before: dict[str, list[tuple[str, ...]]] = {}  # the words before a threshold, by their last word
        for w in kinds.get("threshold", []):
            words = tuple(stem(x) for x in re.findall(r"[a-z0-9<>=≥≤]+", w.lower()))
            if words:
                self.before.setdefault(words[-1], []).append(words)

    def read(self, text: str) -> list[Figure]:
        out: list[Figure] = []
        masked, low = _masked(text)
        # a number in LaTeX math ("$8$K", "$\sim 1.3$T", "$40\%$") reads as the number (same length, so
        # offsets hold)
        if "$" in masked:
            masked = _MATH_NUMBER.sub(lambda m: " " + " " * len(m.group(1)) + m.group(2) + " ", masked)
            low = masked.lower()
        # (_NGRAM needs one of these: seldom there)
        for m in _NGRAM.finditer(masked) if ("gram" in low or "=" in low or "token span" in low
                                             or "token overlap" in low or "string" in low) else ():
            n = m.group(1) or m.group(2)
            out.append(Figure("ngram", m.group(), float(n), m.start(), m.end()))
        taken = [(f.start, f.end) for f in out]
        # the words around each number, lowercased: from `low` where it keeps the offsets (only letters and digits
        # of ASCII count, and lowercasing a slice gives them as lowercasing the whole did)
        aligned = len(low) == len(masked)

        def lowered_slice(a: int, b: int) -> str:
            return low[a:b] if aligned else masked[a:b].lower()
        for m in numbers(masked, low):
            if taken and any(a <= m.start() < b for a, b in taken):
                continue
            value = _value(m)
            after = _typing_words(lowered_slice(m.end(), m.end() + 40))[:4]
            before = _typing_words(lowered_slice(max(0, m.start() - 40), m.start()))[-4:]
            kind, typed_by = self._kind(m, value, after, before, masked)
            if kind is None:
                continue
            end = _after_words(masked, m.end(), typed_by)
            shown = text[m.start():end].replace("$", "").replace("\\%", "%").strip()
            out.append(Figure(kind, m.group().strip(), value, m.start(), m.end(), shown))
        out.sort(key=lambda f: f.start)
        return out + _ranges(masked, out)

    def _kind(self, m, value, after, before, text) -> tuple[Optional[str], int]:
        """The figure's kind, and how many of the words after it typed it."""
        if _OR_MORE.match(text[m.end():m.end() + 20]) or before and any(
                tuple(before[-len(w):]) == w for w in self.before.get(before[-1], ())):
            return "threshold", 0  # "at least 0.4", "over 30%", "32 or more": a cut-off
        if m.group("pct"):
            # "40% more tokens", "15% faster": a relative change, not a share of anything
            return ("change", 0) if _RELATIVE.match(text[m.end():m.end() + 20]) else ("percent", 0)
        suffix = (m.group("scale") or "").strip()
        if suffix.upper() in ("B", "M") and after[:1] and after[0] in _SIZED:
            return "params", 1  # "14B model", "1B-parameter proxies"
        candidates = _CANDIDATES.match(text[m.end():m.end() + 40])
        if candidates:
            return "trials", len(_words(candidates.group()))  # "four learning rates", "3 batch sizes": candidates tried
        for kind, words in self._after_by_first.get(after[0], ()) if after else ():
            if tuple(after[:len(words)]) == words:
                if kind == "params" and not suffix and words != ("paramet",):
                    continue  # "7 models" is a count, "7B models" a size
                return kind, len(words)
        if text[m.start() - 1:m.start()] == "$" and re.search(r"(?:^|[\s(~])\$$", text[max(0, m.start() - 2):m.start()]) \
                and text[m.end():m.end() + 1] != "$":
            return "compute", 0  # money (a "$" of LaTeX math is not)
        if suffix and suffix.upper() in "KMBT":
            return ("params" if suffix.upper() in "MB" else "tokens"), 0
        if m.group("word"):
            return None, 0  # "one of the", "several times": a word number counts only with what it counts
        if value is not None and (value < 1 or "e" in m.group("num").lower()):
            return "rate", 0
        return "number", 0


_LIST_JOIN = re.compile(r"^\s*(?:[A-Za-z-]+\s+){0,2}(?:,\s*(?:and|or)?|and|or|vs\.?|versus|/|to|–|-|~)\s*$",
                        re.IGNORECASE)
_BETWEEN = re.compile(r"\b(?:between|from|ranging from|in the range)\s*$", re.IGNORECASE)


def _ranges(text: str, figures: list[Figure]) -> list[Figure]:
    """Candidate values: figures listed one after another ("1e-4, 3e-4 and 6e-4", "2M vs 5M", "from 125M to
    175B"), as one figure of kind `range`."""
    out = []
    for a, b in zip(figures, figures[1:]):
        if a.kind in ("ngram", "threshold") or b.kind in ("ngram", "threshold"):
            continue
        if re.search(r"[A-Za-z]\($", text[:a.start]):
            continue  # a function's arguments, "normal(0, 0.02)", are one setting, not candidates
        if a.kind == b.kind == "number" and a.value and b.value and max(a.value, b.value) > 100 * min(a.value, b.value):
            continue  # "clipping 1.0 and 2,000 warmup steps": two settings, not a list of candidates
        if _LIST_JOIN.match(text[a.end:b.start]) and (a.kind == b.kind or _BETWEEN.search(text[:a.start])):
            if out and out[-1].end == a.end:  # "1e-4, 3e-4 and 6e-4": one list
                a = out.pop()
            out.append(Figure("range", text[a.start:b.end], None, a.start, b.end))
    return out


def _value(m) -> Optional[float]:
    if m.group("word"):
        return float(_WORD_NUMBERS[m.group("word").lower()])
    raw = m.group("num").replace(",", "").replace("−", "-").replace(" ", "")
    try:
        if "10" in raw and any(x in raw for x in ("×", "x", "\\times")):
            mant, _, exp = re.split(r"×|x|\\times", raw, maxsplit=1)[0], None, re.findall(r"-?\d+$", raw)[0]
            value = float(mant) * 10 ** float(exp)
        else:
            value = float(raw)
    except (ValueError, IndexError):
        return None
    scale = (m.group("scale") or "").strip().lower()
    return value * _SCALES.get(scale, 1.0)


_WORD = re.compile(r"[A-Za-z0-9$<>=≥≤]+(?:-[A-Za-z0-9$<>=≥≤]+)*")


def _after_words(text: str, start: int, n: int) -> int:
    """Where the n words after `start` end (words as _words counts them: hyphenated ones are one)."""
    end = start
    for i, m in zip(range(n), _WORD.finditer(text, start, start + 60)):
        end = m.end()
    return end


_TYPING_WORD = re.compile(r"[a-z0-9$<>=≥≤]+")


def _words(text: str) -> list[str]:
    """The words that may type a figure, stemmed; a hyphenated word is one ("GPU-hours")."""
    return _typing_words(text.lower())


def _typing_words(low: str) -> list[str]:
    return stem_all(_TYPING_WORD.findall(low.replace("-", "")))
