"""The second core: a pure function over a list, computed (in part) in a forked child process.

A cold build's slowest stage is a verdict provider auditing every record; the records are in memory, so a child
forked with them reads them without pickling and sends back only its rows (as JSON). Ahead starts such children
while the records are still being validated, so the second core audits from the first records on. Used only where
it is safe and worth it: fork available, two cores, no other thread running (a fork copies one thread, and a lock
another thread held would stay held in the child), and enough items. Everywhere else the work is done here, with
the same result.
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import struct
import threading
import weakref
from typing import Callable, Optional, Sequence

MINIMUM = 40  # items: below this, starting a process costs more than it saves


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork(items: Sequence, minimum: int = MINIMUM) -> bool:
    return len(items) >= minimum and hasattr(os, "fork") and cores() >= 2 and threading.active_count() == 1


def in_two(fn: Callable[[Sequence], list], items: Sequence, minimum: int = MINIMUM) -> list:
    """fn(items), the first half computed in a forked child while this process computes the second; the same
    list as fn(items) when fn's results are JSON values and each item's results depend on that item alone."""
    if not can_fork(items, minimum):
        return fn(items)
    half = len(items) // 2
    pid, read_end = _fork(lambda: fn(items[:half]))
    try:
        mine = fn(items[half:])
    finally:
        theirs = _collect(pid, read_end)
    return (fn(items[:half]) if theirs is None else theirs) + mine  # a child that failed: its half again, here


def _fork(work: Callable[[], object]) -> tuple[int, int]:
    """work() started in a forked child, which sends its result as JSON: (the child's pid, the pipe to read)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's cleanup
        code = 1
        try:
            os.close(read_end)
            data = json.dumps(work()).encode()
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int):
    """What the child of _fork sent, once it has ended; None when it failed (killed, out of memory)."""
    with os.fdopen(read_end, "rb") as f:
        data = f.read()  # the child blocks on a full pipe until this reads: it cannot finish before
    _, status = os.waitpid(pid, 0)
    return json.loads(data) if os.waitstatus_to_exitcode(status) == 0 else None


class Shared:
    """fn over items from both ends: a child started now takes items from the front while this process does
    other work; when this process asks for the result it takes items from the back until the two meet, so
    neither waits for the other however long the other work took. Each item is done once, by one of them;
    fn(items) must give each item's results on their own (a list per item, in order)."""

    def __init__(self, fn: Callable[[Sequence], list], items: Sequence, minimum: int = MINIMUM):
        self.fn, self.items = fn, list(items)
        self.pid: Optional[int] = None
        if not can_fork(self.items, minimum):
            return
        # two counters in memory the child shares: the next item from the front, the end of what is left
        self.counters = mmap.mmap(-1, 16)
        self.counters[:] = struct.pack("qq", 0, len(self.items))
        self.lock = _lock()
        pid, read_end = _fork(self._front)
        self.pid, self.read_end = pid, read_end
        # if the result is never asked for (the build failed while writing its other tables), the child is
        # stopped and reaped when this object goes, instead of waiting on a full pipe for as long as we live
        self._abandon = weakref.finalize(self, _stop, pid, read_end)

    def _front(self) -> dict[int, list]:
        """The child's part: items from the front, until the two meet."""
        done = {}
        while (i := self._take(front=True)) is not None:
            done[i] = self.fn([self.items[i]])
        return done

    def left(self) -> int:
        """How many items no process has taken yet (read without the lock: a moment's view)."""
        if self.pid is None:
            return 0
        start, end = struct.unpack("qq", self.counters[:])
        return max(0, end - start)

    def stop(self) -> None:
        """Stop the child now (the result will not be asked for)."""
        if self.pid is not None:
            self._abandon()
            self.pid = None

    def _take(self, front: bool) -> Optional[int]:
        with self.lock:
            start, end = struct.unpack("qq", self.counters[:])
            if start >= end:
                return None
            if front:
                self.counters[:8] = struct.pack("q", start + 1)
                return start
            self.counters[8:] = struct.pack("q", end - 1)
            return end - 1

    def result(self) -> list:
        """fn's results for every item, in the order of the items."""
        if self.pid is None:
            return self.fn(self.items)
        mine = {}
        while (j := self._take(front=False)) is not None:
            mine[j] = self.fn([self.items[j]])
        self._abandon.detach()
        sent = _collect(self.pid, self.read_end)
        self.pid = None
        if sent is None:  # the child failed: what it had taken, again here
            theirs = {i: self.fn([self.items[i]]) for i in range(len(self.items)) if i not in mine}
        else:
            theirs = {int(i): rows for i, rows in sent.items()}  # JSON made the keys text
        out: list = []
        for i in range(len(self.items)):
            out += mine[i] if i in mine else theirs[i]
        return out


class Ahead:
    """fn over items that come one at a time (records, as they are validated), in forked children from the first
    ones on: the items that have come go to a child of their own (a Shared batch) once there are `minimum` of them
    and the child before has run out of items, and the last ones when close() says no more will come. result()
    joins each batch from its back (Shared.result) and gives fn's results for every item, in the order of the
    items. fn(items) must give each item's results on their own, as for Shared."""

    def __init__(self, fn: Callable[[Sequence], list], minimum: int = MINIMUM):
        self.fn, self.minimum = fn, minimum
        self.items: list = []
        self.batches: list[Shared] = []
        self._sent = 0  # the items before this one have gone to a batch

    def add(self, item) -> None:
        self.items.append(item)
        if len(self.items) - self._sent >= self.minimum and (not self.batches or self.batches[-1].left() == 0):
            self._batch()

    def close(self) -> None:
        """No more items: the ones not yet in a batch go to one now (or are done here, if too few to fork)."""
        if len(self.items) > self._sent:
            self._batch()

    def _batch(self) -> None:
        self.batches.append(Shared(self.fn, self.items[self._sent:], self.minimum))
        self._sent = len(self.items)

    def result(self) -> list:
        self.close()
        out: list = []
        for batch in self.batches:
            out += batch.result()
        return out

    def stop(self) -> None:
        """Stop every child (the build failed: the result will not be asked for)."""
        for batch in self.batches:
            batch.stop()


def _lock():
    import multiprocessing

    return multiprocessing.get_context("fork").Lock()


def _stop(pid: int, read_end: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    os.close(read_end)
