"""RUBRIC.md as the vocabulary states it: which units mention or give which part of an omission, and the verdict.

For each unit and omission: the unit is skipped when it sits in a section out of the omission's scope (fine-tuning
data is not pretraining data); a part is mentioned when one of its cues occurs as whole words (a weak cue only next
to one of the part's anchors, and none of its weak_not_with), unless the cue stands in a negation in its clause
(then, as the part says, it is ignored, an admission that counts as a mention, or a mention of another omission's
part); a part is given when a mention comes with a figure of one of the part's kinds (and, with `needs`, a mention
of one of those parts in the unit, its headings or the sentence before). In a section an omission reads for mentions
only (acknowledgements; for the search, fine-tuning too) a part is mentioned at most.
The verdict: disclosed when one of the omission's rules holds, partial when any part is mentioned, else absent.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from .figures import Figure
from .units import Unit
from .words import Phrase, PhraseIndex, joined, lowered, matches_at_word_starts, phrase, tokens

if TYPE_CHECKING:  # the vocabulary may be kb.compiled's classes, with the same fields and methods
    from kb.model import Omission, OmissionPart, Vocabulary

LEVELS = {"absent": 0, "partial": 1, "disclosed": 2}
_NEGATION = re.compile(r"\b(?:no|not|never|without|none|neither|nor|cannot|nothing|lack(?:s|ing)?|absence of|"
                       r"zero|infeasible|unable|impossible|rather than|instead of|too costly|too expensive|\w+n['’]t)\b", re.IGNORECASE)
_NEGATION_LOWER = re.compile(_NEGATION.pattern)  # for lowercased text (auditor.words.lowered)
_NEGATING = frozenset({"no", "not", "without", "zero", "never"})  # a cue with one of these is a negation itself
# Whether a text has a negation anywhere, where a clause's last five words would be joined by one space each
_NEGATION_ANY = re.compile(_NEGATION.pattern.replace(" ", r"\s+"), re.IGNORECASE)
_NEGATION_ANY_LOWER = re.compile(_NEGATION_ANY.pattern)
# A clause ends at these; "but" starts a word ("contribute" has none), which matches_at_word_starts checks (twice
# as soon on a long text as a \b in the pattern).
_CLAUSE = re.compile(r"[;:.!?()\u2014]|,\s+(?:but|while|although|though|whereas)\b|but\b")


def _clause_ends(text: str) -> list[int]:
    return [end for _, end in matches_at_word_starts(_CLAUSE, text)]


@dataclass
class Hit:
    """One unit's evidence for one part of an omission."""

    omission: str
    part: str
    cue: str
    unit: Unit
    figure: Optional[Figure] = None
    given: bool = False
    admission: bool = False  # a negated cue counted as a mention ("we did not check")
    limited: str = ""  # the kind of section the omission reads for mentions only ("acknowledgements", "fine-tuning")

    @property
    def partial_only(self) -> bool:
        """A mention at most: an admission, or from a section the omission reads for mentions only."""
        return self.admission or bool(self.limited)


@dataclass
class Decision:
    status: str
    given: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    rule: str = ""  # which rule of RUBRIC.md decided
    lacks: list[str] = field(default_factory=list)  # partial: what the nearest disclosed rule still needs


@dataclass
class Dropped:
    """Why a unit gave no evidence for an omission (for --explain)."""

    omission: str
    unit: Unit
    why: str


class _Part:
    def __init__(self, omission: str, part: OmissionPart, gazetteer: dict[str, list[str]]):
        self.omission, self.id, self.spec = omission, part.id, part
        self.key = (omission, part.id)
        self.cues = [phrase(c) for c in part.cues]
        self.weak = [phrase(c) for c in (*part.weak_cues, *(n for g in part.weak_gazetteers for n in gazetteer[g]))]
        self.anchors = [phrase(c) for c in part.anchors]
        self.weak_not_with = [phrase(c) for c in part.weak_not_with]
        self.in_sections = {kind: ([phrase(c) for c in sc.cues], [phrase(a) for a in sc.anchors])
                            for kind, sc in part.in_sections.items()}
        self.figures = set(part.figures)
        self.row_figures = set(part.row_figures)
        self.needs = set(part.needs)
        self.yields_to: list[_Part] = []  # resolved by the Rulebook, once every part exists

    def figure(self, unit: Unit) -> Optional[Figure]:
        kinds = self.figures | self.row_figures if unit.kind == "row" else self.figures
        return next((f for f in unit.figures if f.kind in kinds), None) if kinds else None  # none read for nothing


_FINE_TUNING = ("", "fine-tuning")


class _Scan:
    """Where every part's cues, weak cues and anchors occur in some words: one pass of the rulebook's index."""

    def __init__(self, index: PhraseIndex, words: list[str], not_cue_starts: set[str]):
        self.cues: dict[tuple, list[tuple[Phrase, int]]] = {}
        self.weak: dict[tuple, list[tuple[Phrase, int]]] = {}
        self.anchors: set[tuple] = set()
        self.weak_kept: dict[tuple, Phrase] = {}  # parts whose weak cues do not count here: one of their weak_not_with
        self.negations: dict = {}  # whether a cue at a position stands in a negation, once known
        found = index.scan(words)
        # the words of a not-cue are no cue's (looked for only where a word that starts one stands)
        masked = () if not_cue_starts.isdisjoint(words) else {
            at + k for (key, kind, p), at in found if kind == "not-cue" for k in range(len(p.stems))}
        for (key, kind, p), at in found:
            if kind == "not-cue" or (at in masked and kind != "anchor"):
                continue
            if kind == "cue":
                self.cues.setdefault(key, []).append((p, at))
            elif kind == "weak":
                self.weak.setdefault(key, []).append((p, at))
            elif kind == "anchor":
                self.anchors.add(key)
            elif kind == "weak-not-with":
                self.weak_kept.setdefault(key, p)
            elif kind[0] == "section-cue":
                self.cues.setdefault((key, kind[1]), []).append((p, at))
            else:  # a section's anchor
                self.anchors.add((key, kind[1]))

    def matches(self, part: _Part, sections: frozenset = frozenset()) -> list[tuple[Phrase, int]]:
        """Every cue of the part found and where, in the order of the text: its strong cues; its weak ones only
        when no strong cue is found and one of its anchors is (and none of its weak_not_with); in a section of a
        kind the part names, that section's cues next to one of that section's anchors."""
        found = self.cues.get(part.key)
        if found:
            return found
        if part.key in self.anchors and part.key in self.weak and part.key not in self.weak_kept:
            return self.weak[part.key]
        for kind in part.in_sections:
            if kind in sections and (part.key, kind) in self.anchors and (part.key, kind) in self.cues:
                return self.cues[(part.key, kind)]
        return []

    def mentions(self, parts: list[_Part], part_ids: set[str]) -> bool:
        return any(p.id in part_ids and self.matches(p) for p in parts)


class Rulebook:
    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self.omissions: dict[str, Omission] = {o.id: o for o in vocabulary.omissions}
        self.parts = {o.id: [_Part(o.id, p, vocabulary.gazetteer) for p in o.parts] for o in vocabulary.omissions}
        self.scopes = {o.id: frozenset(o.out_of_scope) for o in vocabulary.omissions}
        self.partial_only = {o.id: frozenset(o.partial_only) for o in vocabulary.omissions}
        # the parts only a later way to disclosed names (a reference to an earlier check, for the threshold): an
        # absent verdict does not ask for them
        self.alternatives = {o.id: {x for r in o.rules[1:] for x in (*r.given, *r.mentioned)}
                             - {*o.rules[0].given, *o.rules[0].mentioned} for o in vocabulary.omissions}
        by_ref = {f"{p.omission}/{p.id}": p for parts in self.parts.values() for p in parts}
        for parts in self.parts.values():
            for p in parts:
                p.yields_to = [by_ref[ref] for ref in p.spec.yields_to]
        # every cue of every part, and the words that make a sentence about fine-tuning, in one index
        self.index = PhraseIndex()
        self.not_cue_starts: set[str] = set()  # the first words of the not-cues (a unit without one has none)
        for parts in self.parts.values():
            for part in parts:
                for kind, phrases in (("cue", part.cues), ("weak", part.weak), ("anchor", part.anchors),
                                      ("weak-not-with", part.weak_not_with)):
                    for p in phrases:
                        self._file(p, part.key, kind)
                for section, (cues, anchors) in part.in_sections.items():
                    for p in cues:
                        self._file(p, part.key, ("section-cue", section))
                    for p in anchors:
                        self._file(p, part.key, ("section-anchor", section))
        for text in vocabulary.not_cues:
            self._file(phrase(text), None, "not-cue")
        for text in vocabulary.sentence_words("fine-tuning"):
            self._file(phrase(text), _FINE_TUNING, "anchor")

    def _file(self, p: Phrase, key, kind) -> None:
        """File a phrase in the index, and a phrase of several words as one hyphenated word too."""
        for form in (p, joined(p)):
            if form is not None:
                self.index.add(form, (key, kind, form))
                if kind == "not-cue" and form.stems:
                    self.not_cue_starts.add(form.stems[0])

    def hits(self, units: list[Unit], explain: Optional[list] = None) -> list[Hit]:
        out: list[Hit] = []
        scans: dict[int, _Scan] = {}
        contexts: dict[str, _Scan] = {}
        for i, u in enumerate(units):
            scan = scans[i] = _Scan(self.index, u.words, self.not_cue_starts)
            # the sentence before in the paragraph (for a record, the claim before) may hold what a part needs
            before = scans[i - 1] if i and (units[i - 1].paragraph == u.paragraph or u.claim is not None) else None
            if u.context not in contexts:
                contexts[u.context] = _Scan(self.index, tokens(u.context) if u.context else [], self.not_cue_starts)
            context = contexts[u.context]
            in_fine_tuning = _FINE_TUNING in scan.anchors
            for o in self.vocabulary.omissions:
                scope = self.scopes[o.id]
                if scope & u.sections or ("fine-tuning" in scope and in_fine_tuning):
                    if explain is not None:
                        explain.append(Dropped(o.id, u, f"in a {', '.join(sorted(scope & u.sections) or ['fine-tuning'])} "
                                                        f"section or sentence: out of scope"))
                    continue
                out += self._unit_hits(o, u, scan, before, context, explain, in_fine_tuning)
            scans.pop(i - 1, None)
        return out

    def _unit_hits(self, o: Omission, u: Unit, scan: _Scan, before: Optional[_Scan], context: _Scan,
                   explain: Optional[list], in_fine_tuning: bool) -> list[Hit]:
        parts = self.parts[o.id]
        mentioned: dict[str, tuple[Phrase, int]] = {}
        out: list[Hit] = []
        memo = scan.negations
        for p in parts:
            if u.derived and not p.spec.from_derived:
                continue
            found = scan.matches(p, u.sections)
            if not found:
                if explain is not None and p.key in scan.weak_kept and p.key in scan.weak and p.key in scan.anchors:
                    explain.append(Dropped(o.id, u, f"{p.id}: '{scan.weak[p.key][0][0].text}' next to "
                                                    f"'{scan.weak_kept[p.key].text}' is not a cue"))
                continue
            taken = next((other for other in p.yields_to if scan.matches(other, u.sections)), None)
            if taken:
                if explain is not None:
                    explain.append(Dropped(o.id, u, f"{p.id}: the sentence is {taken.omission}/{taken.id} evidence"))
                continue
            # the first cue outside a negation mentions the part ("we did not use dropout, but swept four
            # learning rates": the sweep counts); when every cue is negated, the part says what that means
            standing = next((m for m in found if not self._negated_cue(u, *m, memo)), None)
            if standing:
                if p.spec.negated != "only":
                    mentioned[p.id] = standing
                continue
            # an admission must be the report's own words (a record's quote), not its statement that the report
            # says nothing: the first negated cue there
            own = next((m for m in found if u.offsets[m[1]] >= u.reported_from), None)
            if own is None:
                continue
            cue, at = own
            if p.spec.negated in ("mention", "only"):
                out.append(Hit(o.id, p.id, cue.text, u, admission=True))
            elif "/" in p.spec.negated:
                other, _, part = p.spec.negated.partition("/")
                out.append(Hit(other, part, cue.text, u, admission=True))
            elif explain is not None:
                explain.append(Dropped(o.id, u, f"{p.id}: '{cue.text}' stands in a negation"))
        partial_only = self.partial_only[o.id]
        limited = min(partial_only & u.sections, default="") or (
            "fine-tuning" if "fine-tuning" in partial_only and in_fine_tuning else "")
        for p in parts:
            if p.id not in mentioned:
                continue
            cue, _ = mentioned[p.id]
            # what the part needs, in the unit before, counts only where that unit is not what the part yields to
            # ("GPU-hours" after "untracked compute such as training failures" are not the failures' cost)
            needs_met = not p.needs or bool(p.needs & set(mentioned)) or p.spec.nearby and (
                context.mentions(parts, p.needs) or (before is not None and before.mentions(parts, p.needs)
                                                     and not any(before.matches(y) for y in p.yields_to)))
            figure = p.figure(u) if needs_met else None
            given = (not p.figures and not p.row_figures and needs_met) or figure is not None
            if p.needs and not needs_met and explain is not None:
                explain.append(Dropped(o.id, u, f"{p.id}: '{cue.text}' without {' or '.join(sorted(p.needs))} nearby"))
                continue
            if p.needs and not needs_met:
                continue
            out.append(Hit(o.id, p.id, cue.text, u, figure, given and not limited, limited=limited))
        return out

    def _negated_cue(self, u: Unit, cue: Phrase, at: int, memo: dict) -> bool:
        """A cue that is itself a negation ("no human intervention") is not negated by it. `memo`: the answers
        for this unit so far, by word position, and what they were found from."""
        if not _NEGATING.isdisjoint(cue.stems):
            return False
        if "any" not in memo:  # most units have no negation word anywhere: nothing to look for
            memo["low"] = low = lowered(u.text)
            memo["any"] = (_NEGATION_ANY_LOWER.search(low) if low is not None
                           else _NEGATION_ANY.search(u.text)) is not None
        if not memo["any"]:
            return False
        if at not in memo:
            memo[at] = self._negated(u, at, memo)
        return memo[at]

    @staticmethod
    def _negated(u: Unit, at: int, memo: dict) -> bool:
        """Whether a negation stands before the word at `at` in its clause (within five words)."""
        if at >= len(u.offsets):
            return False
        start = u.offsets[at]
        if "clauses" not in memo:  # where each clause of the unit ends, found once
            memo["clauses"] = _clause_ends(u.text)
        ends = memo["clauses"]
        i = bisect_right(ends, start)
        clause_start = ends[i - 1] if i else 0
        low = memo["low"]  # the lowercased text, where it keeps the offsets (and whitespace: split the same)
        text = low if low is not None else u.text
        window = " ".join(text[max(clause_start, start - 400):start].rsplit(None, 5)[-5:])  # its last five words
        return bool(_NEGATION_LOWER.search(window) if low is not None else _NEGATION.search(window))

    def decide(self, o: Omission, hits: list[Hit]) -> Decision:
        given = {h.part for h in hits if h.given}
        mentioned = {h.part for h in hits}
        full_mentions = {h.part for h in hits if not h.partial_only}
        for i, rule in enumerate(o.rules):
            if set(rule.given) <= given and set(rule.mentioned) <= (full_mentions | given):
                words = " and ".join(rule.given) + (f" given, {' and '.join(rule.mentioned)} named"
                                                   if rule.mentioned else " given")
                return Decision("disclosed", sorted(given), sorted(mentioned - given), f"disclosed: {words}")
        if mentioned:
            # the disclosed rule it comes closest to, and what that rule still lacks
            def lacking(rule):
                return ([p for p in rule.given if p not in given]
                        + [p for p in rule.mentioned if p not in full_mentions | given])
            lacks = min((lacking(r) for r in o.rules), key=len)
            found = (f"{', '.join(sorted(given))} given" if given else "") + (
                "; " if given and mentioned - given else "") + (
                f"{', '.join(sorted(mentioned - given))} only mentioned" if mentioned - given else "")
            # where the only mentions stand in a section read for mentions at most, say so: the figures are there
            limited = sorted({h.limited for h in hits if h.limited and h.part not in given | full_mentions})
            if limited:
                found += f" (in {' and '.join(limited)} only, which {'give' if len(limited) > 1 else 'gives'} " \
                         f"mentions at most)"
            return Decision("partial", sorted(given), sorted(mentioned - given),
                            f"partial: {found}; disclosed would need {' and '.join(lacks)} as well", lacks)
        return Decision("absent", [], [], "absent: nothing on it")
