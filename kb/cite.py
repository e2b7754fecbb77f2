"""How a figure reads when cited: "2.788M GPU-hours", with its report, source, locator, check date and status."""

from __future__ import annotations

from typing import Optional

from .model import Claim, Report, Source

_BOUND_WORDS = {"about": "about ", "at-least": "at least ", "at-most": "at most ", "exact": ""}
_SYMBOL_UNITS = {"percent": "%", "%": "%"}


def figure(claim: Claim) -> str:
    """The figure as a reader would write it: "419 interruptions", "38–43%", "at least 20%", "2.788M GPU-hours"."""
    if claim.value is None:
        return ""
    text = claim.value_text or (f"{claim.low}–{claim.high}" if claim.is_range else f"{claim.value}")
    unit = (claim.unit or "").strip()
    if unit.lower() in _SYMBOL_UNITS:
        body = f"{text}{_SYMBOL_UNITS[unit.lower()]}"
    else:
        body = f"{text} {unit}".strip()
    return _BOUND_WORDS.get(claim.bound, "") + body


def citation(report: Report, claim: Claim, source: Optional[Source] = None, computed: Optional[float] = None) -> str:
    """A ready-to-paste citation of one claim, plain text."""
    source = source or (report.source(claim.source) if claim.source else None)
    head = figure(claim) or claim.statement
    parts = [f"{report.title} ({report.organization}, {report.published.year})"]
    if claim.status == "derived":
        computed_text = f" = {computed:.4g}" if computed is not None else ""
        parts.append(f"derived: {claim.formula}{computed_text}")
    if source is not None:
        if source.title != report.title:
            parts.append(source.title)
        if claim.locator:
            parts.append(claim.locator)
        parts.append(source.url or source.path or "")
    elif claim.locator:
        parts.append(claim.locator)
    checked = f"checked {claim.verified.isoformat()}" if claim.verified else "no check date"
    parts.append(f"{checked}, {claim.status}")
    return f"{head} — " + ", ".join(p for p in parts if p)
