"""How often the garbage collector runs: less often than Python's default, for every command.

The commands make many objects that live until they end (imports, records, claims, rows). With the default
thresholds (a collection every 700 new objects) collections walk them again and again: at 100,000 claims a build
took 35.8 s of CPU against 25.4 s with fewer collections and the records frozen, and `audit FILE` spent a tenth of
its time collecting (benchmarks/README.md). Cyclic garbage is still collected: peak memory is unchanged.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

YOUNG = 100_000  # new objects between two collections of the youngest generation (Python's default: 700)
OLDEST = 50  # collections of the middle generation between two of the oldest (default: 10)


def collect_less() -> tuple[int, int, int]:
    """Collect less often from now on (never more often than before); returns the thresholds it replaced."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], YOUNG), old[1], max(old[2], OLDEST))
    return old


@contextmanager
def few_collections() -> Iterator[None]:
    """Collect less often while the block runs; objects frozen in it are unfrozen after (those frozen before
    stay frozen)."""
    old, frozen = collect_less(), gc.get_freeze_count()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if not frozen:
            gc.unfreeze()
