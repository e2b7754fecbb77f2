"""The second core: a pure function over a list, half of it computed in a forked child process.

A cold build's slowest stage is a verdict provider auditing every record; the records are already in memory, so a
child forked at that point reads them without pickling and sends back only its rows (as JSON). Used only where it
is safe and worth it: fork available, two cores, no other thread running (a fork copies one thread, and a lock
another thread held would stay held in the child), and enough items.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Callable, Sequence

MINIMUM = 40  # items: below this, starting a process costs more than it saves


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def in_two(fn: Callable[[Sequence], list], items: Sequence, minimum: int = MINIMUM) -> list:
    """fn(items), the first half computed in a forked child while this process computes the second; the same
    list as fn(items) when fn's results are JSON values and each item's results depend on that item alone."""
    if len(items) < minimum or not hasattr(os, "fork") or cores() < 2 or threading.active_count() > 1:
        return fn(items)
    half = len(items) // 2
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's cleanup
        code = 1
        try:
            os.close(read_end)
            data = json.dumps(fn(items[:half])).encode()
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        mine = fn(items[half:])
    finally:
        with os.fdopen(read_end, "rb") as f:
            data = f.read()  # the child blocks on a full pipe until this reads: it cannot finish before
        _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return fn(items[:half]) + mine  # the child failed (killed, out of memory): its half again, here
    return json.loads(data) + mine
