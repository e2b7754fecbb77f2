"""Units: free text in records, normalized where the vocabulary knows them ("billion tokens" → tokens × 1e9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .model import Vocabulary


@dataclass(frozen=True)
class Normalized:
    unit: str  # the vocabulary's unit id
    base: str  # the base unit values are converted to
    factor: float  # value × factor = value in base units
    scale: float = 1.0  # the scale word written before the unit ("billion tokens": 1e9)
    minimum: Optional[float] = None  # the unit's range, in the unit itself (percent: 0 to 100)
    maximum: Optional[float] = None

    def outside(self, value: float) -> Optional[str]:
        """Why a value written in this unit is impossible ("below 0"), or None."""
        v = value * self.scale
        if self.minimum is not None and v < self.minimum:
            return f"below {self.minimum:g}, the least a figure in {self.unit} can be"
        if self.maximum is not None and v > self.maximum:
            return f"above {self.maximum:g}, the most a figure in {self.unit} can be"
        return None


class UnitIndex:
    """Lookup of the vocabulary's units, their aliases and plurals, with an optional scale word in front."""

    def __init__(self, vocabulary: Vocabulary):
        self._typos: dict[str, Optional[str]] = {}
        self._normalized: dict[str, Optional[Normalized]] = {}  # a knowledge base repeats its units
        self.names: dict[str, tuple[str, str, float]] = {}
        self.ranges: dict[str, tuple[Optional[float], Optional[float]]] = {}
        for u in vocabulary.units:
            self.ranges[u.id] = (None if u.min is None else float(u.min), None if u.max is None else float(u.max))
            for name in [u.id, *u.aliases]:
                self.names[name.lower()] = (u.id, u.base, float(u.scale))
        self.scales = {k.lower(): float(v) for k, v in vocabulary.scales.items()}

    def _lookup(self, name: str) -> Optional[tuple[str, str, float]]:
        name = name.lower()
        for candidate in (name, name[:-1] if name.endswith("s") else name + "s"):
            if candidate in self.names:
                return self.names[candidate]
        return None

    def normalize(self, unit: Optional[str]) -> Optional[Normalized]:
        if not unit:
            return None
        try:
            return self._normalized[unit]
        except KeyError:
            found = self._normalize(unit)
            if len(self._normalized) < 100_000:
                self._normalized[unit] = found
            return found

    def _normalize(self, unit: str) -> Optional[Normalized]:
        text = " ".join(unit.split())
        scale = 1.0
        first, _, rest = text.partition(" ")
        if rest and first.lower() in self.scales:
            scale, text = self.scales[first.lower()], rest
        hit = self._lookup(text)
        if hit is None:
            return None
        unit_id, base, factor = hit
        return Normalized(unit_id, base, factor * scale, scale, *self.ranges[unit_id])

    def likely_typo(self, unit: Optional[str]) -> Optional[str]:
        """The known unit this one is a letter or two away from ("interuptions" → "interruptions"), if any."""
        if not unit or self.normalize(unit):
            return None
        if unit not in self._typos:  # a record repeats its units: each is compared with every known one once
            self._typos[unit] = self._nearest(unit)
        return self._typos[unit]

    def _nearest(self, unit: str) -> Optional[str]:
        from rapidfuzz.distance import Levenshtein

        text = " ".join(unit.split()).lower()
        first, _, rest = text.partition(" ")
        if rest and first in self.scales:
            text = rest
        if len(text) < 5:  # short units ("x", "TB") are too close to each other to call a typo
            return None
        limit = 1 if len(text) < 8 else 2
        best = None
        for name, (unit_id, _, _) in self.names.items():
            if len(name) < 5:
                continue
            d = Levenshtein.distance(text, name, score_cutoff=limit)
            if d <= limit and (best is None or d < best[0]):
                best = (d, unit_id)
        return best[1] if best else None


_indexes: dict[int, tuple[Vocabulary, UnitIndex]] = {}


def index(vocabulary: Vocabulary) -> UnitIndex:
    """The (cached) unit index of a vocabulary."""
    hit = _indexes.get(id(vocabulary))
    if hit is None or hit[0] is not vocabulary:
        hit = _indexes[id(vocabulary)] = (vocabulary, UnitIndex(vocabulary))
    return hit[1]
