"""Near duplicates: a report that looks like another one, and a claim that repeats another claim of its report.

One rule for everyone: the checks warn about them (KB323, KB324) and the auditor lists the reports a new one
looks like. Reports are compared through an index of their title words, organisations and models, so a
knowledge base of thousands of reports is not compared pair by pair.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable, Optional

TITLE_ALIKE = 90  # rapidfuzz token-set ratio of two titles, out of 100
SAME_ORGANIZATION = 90  # rapidfuzz ratio of two organisations' names
CLAIMS_ALIKE = 95  # token-sort ratio of two statements of one report with the same figure and unit
_WORD_CHARACTER = "[a-z0-9]"
_WORD = re.compile(_WORD_CHARACTER + "+")
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")
_COMMON = 0.2  # a title word in more than this share of titles (and at least 20) does not narrow the search


@dataclass
class Summary:
    """What telling near duplicates apart needs to know of a report."""

    id: str
    title: str
    organization: str = ""
    models: tuple[str, ...] = ()
    path: str = ""
    title_line: Optional[int] = None


@dataclass
class Match:
    other: Summary
    score: float  # how alike the titles are
    why: str


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class Index:
    """The reports of a knowledge base, to find those a report looks like. The first question is answered by
    searching the reports' texts for its words (a one-record command asks one: indexing a thousand reports' words
    took about 7 ms, the search under 1 ms); the index of every report's words is made for the second."""

    def __init__(self, reports: Iterable[Summary]):
        self.reports = list(reports)
        self.limit = max(20, _COMMON * len(self.reports))
        self.by_word: Optional[dict[str, list[int]]] = None
        self.asked = 0

    def _index(self) -> dict[str, list[int]]:
        if self.by_word is None:
            self.by_word = {}
            for i, s in enumerate(self.reports):
                for w in _words(s.title) | _words(s.organization) | {m.lower() for m in s.models}:
                    self.by_word.setdefault(w, []).append(i)
        return self.by_word

    def _candidates(self, title: str, organization: str, models: Iterable[str]) -> set[int]:
        keys = (_words(title) | _words(organization) | {m.lower() for m in models})
        self.asked += 1
        with_word = self._index().get if self.asked > 1 else _Search(self.reports).reports_with
        found: set[int] = set()
        for w in keys:
            ids = with_word(w)
            if ids and len(ids) <= self.limit:  # a word in too many reports does not narrow the search
                found.update(ids)
        return found

    def alike(self, title: str, organization: str = "", models: Iterable[str] = (),
              exclude: Optional[str] = None) -> list[Match]:
        """The reports this one looks like, most alike first: titles TITLE_ALIKE% alike and the same organisation
        or a shared model (the title alone when neither is known, as for a report's text), or the same
        organisation and a shared model whatever the titles."""
        from rapidfuzz import fuzz, utils

        models = {m.lower() for m in models}
        out = []
        for i in self._candidates(title, organization, models):
            o = self.reports[i]
            if exclude is not None and o.id == exclude:
                continue
            score = fuzz.token_set_ratio(title, o.title, processor=utils.default_process)
            same_org = bool(organization) and fuzz.ratio(organization.lower(), o.organization.lower()) >= \
                SAME_ORGANIZATION
            shared = sorted(models & {m.lower() for m in o.models})
            if score >= TITLE_ALIKE and (same_org or shared or not (organization or models)):
                why = [f"title {score:.0f}% alike"]
                if same_org:
                    why.append("same organization")
                if shared:
                    why.append("shared models: " + ", ".join(shared))
            elif same_org and shared:
                why = [f"same organization and models ({', '.join(shared)})"]
            else:
                continue
            out.append(Match(o, round(score, 1), ", ".join(why)))
        return sorted(out, key=lambda m: (-m.score, m.other.id))


class _Search:
    """Which reports have a word (as Index.by_word has it), found in their texts rather than from an index."""

    def __init__(self, reports: list[Summary]):
        self.reports = reports
        texts = [f"{s.title}\n{s.organization}".lower() for s in reports]  # each lowered as _words lowers it
        self.text = "\n".join(texts)  # a line break is no part of a word: no word spans two reports
        self.starts, at = [], 0
        for t in texts:
            self.starts.append(at)
            at += len(t) + 1
        self.models: Optional[dict[str, list[int]]] = None

    def reports_with(self, word: str) -> list[int]:
        found: set[int] = set()
        if word in self.text and _words(word) == {word}:  # a word of a text, as _words has it
            # the word first, so that the search skips to it (fifteen times sooner than a look-behind first),
            # then no word character before it or after it
            w = _WORD_CHARACTER
            bounded = re.compile(f"{word}(?<=(?<!{w}){word})(?!{w})")
            found.update(bisect_right(self.starts, m.start()) - 1 for m in bounded.finditer(self.text))
        if self.models is None:
            self.models = {}
            for i, s in enumerate(self.reports):
                for m in s.models:
                    self.models.setdefault(m.lower(), []).append(i)
        found.update(self.models.get(word, ()))
        return sorted(found)


def repeated_claims(claims) -> list[tuple[int, int, float]]:
    """(i, j, score) for claim i that repeats an earlier claim j of the same report: the same figure and unit,
    the same numbers in the statement, and statements CLAIMS_ALIKE% alike."""
    from rapidfuzz import fuzz, utils

    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(claims):
        if c.value is not None:
            groups.setdefault((c.value, (c.unit or "").lower()), []).append(i)
    out = []
    for members in groups.values():
        for a_pos, i in enumerate(members):
            for j in members[:a_pos]:
                a, b = claims[i], claims[j]
                if _NUMBERS.findall(a.statement) != _NUMBERS.findall(b.statement):
                    continue  # "stage 1 shares" and "stage 2 shares" are different claims
                score = fuzz.token_sort_ratio(a.statement, b.statement, processor=utils.default_process)
                if score >= CLAIMS_ALIKE:
                    out.append((i, j, score))
    return out
