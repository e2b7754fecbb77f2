"""The second core (kb.parallel.in_two): half the work in a forked child, the same answer as doing it all here."""

from __future__ import annotations

import os
import threading

from kb import parallel

ITEMS = list(range(100))


def rows(items) -> list:
    return [{"item": i, "square": i * i, "pid": os.getpid()} for i in items]


def test_half_the_items_are_computed_in_a_child_and_the_answer_is_the_same():
    parent = os.getpid()
    got = parallel.in_two(rows, ITEMS)
    assert [(r["item"], r["square"]) for r in got] == [(i, i * i) for i in ITEMS]
    pids = {r["pid"] for r in got}
    if parallel.cores() >= 2:
        assert len(pids) == 2 and parent in pids  # the first half came from another process
        assert {r["pid"] for r in got[50:]} == {parent}


def test_a_child_that_fails_has_its_half_done_here():
    parent = os.getpid()

    def fails_in_a_child(items):
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return rows(items)

    got = parallel.in_two(fails_in_a_child, ITEMS)
    assert [r["item"] for r in got] == ITEMS and {r["pid"] for r in got} == {parent}


def test_no_fork_while_another_thread_runs_or_for_a_few_items():
    parent = os.getpid()
    assert {r["pid"] for r in parallel.in_two(rows, ITEMS[:10])} == {parent}
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert {r["pid"] for r in parallel.in_two(rows, ITEMS)} == {parent}
    finally:
        stop.set()
        other.join()
