"""The day every date judgement is made against (stale checks, citability, dates in the future).

The clock is an input: `--today DATE` on the commands, or KB_TODAY in the environment, else the system's date.
Every part of the program asks `today()` here, so tests and reproducible builds never read the real clock.
"""

from __future__ import annotations

import os
from datetime import date
from typing import Optional

ENV = "KB_TODAY"


class ClockError(ValueError):
    pass


def parse_day(text: str, what: str = ENV) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ClockError(f"{what}: {text!r} is not a date (write YYYY-MM-DD)") from None


def today(given: Optional[date] = None) -> date:
    """`given`, else KB_TODAY, else the system's date."""
    if given is not None:
        return given
    env = os.environ.get(ENV)
    if env:
        return parse_day(env)
    return date.today()
