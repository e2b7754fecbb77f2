"""The second core (kb.parallel): work in a forked child, the same answer as doing it all here."""

from __future__ import annotations

import os
import threading

import pytest

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


def one_each(items) -> list:
    """A list of results per item, on its own (what kb.parallel.Shared asks of its function)."""
    return [{"item": i, "pid": os.getpid()} for i in items]


def test_shared_work_gives_every_item_once_in_order_from_both_processes():
    parent = os.getpid()
    started, tell = os.pipe()

    def tells_when_the_child_has_begun(items):
        if os.getpid() != parent:
            os.write(tell, b"x")
        return one_each(items)

    forked = parallel.can_fork(ITEMS)  # two cores, no other thread
    shared = parallel.Shared(tells_when_the_child_has_begun, ITEMS)
    if forked:
        os.read(started, 1)  # the parent's other work lasts until the child has done one item at least
    got = shared.result()  # then it takes, from the back, what the child has not yet taken
    os.close(started), os.close(tell)
    assert [r["item"] for r in got] == ITEMS
    if forked:
        child_items = [r["item"] for r in got if r["pid"] != parent]
        assert child_items and child_items == ITEMS[:len(child_items)]  # the child works from the front
        assert {r["pid"] for r in got[len(child_items):]} == {parent}


def test_shared_work_whose_child_fails_is_done_here():
    parent = os.getpid()

    def fails_in_a_child(items):
        if os.getpid() != parent:
            os._exit(3)  # as if killed part way through
        return one_each(items)

    got = parallel.Shared(fails_in_a_child, ITEMS).result()
    assert [r["item"] for r in got] == ITEMS and {r["pid"] for r in got} == {parent}


def test_shared_work_without_a_child_is_done_when_asked():
    parent = os.getpid()
    got = parallel.Shared(one_each, ITEMS[:5]).result()
    assert [r["item"] for r in got] == ITEMS[:5] and {r["pid"] for r in got} == {parent}


def test_shared_work_never_asked_for_leaves_no_child_behind():
    """A build that fails while writing its other tables never asks for the verdicts: the child is stopped."""
    import gc

    shared = parallel.Shared(one_each, ITEMS * 100)
    pid = shared.pid
    del shared
    gc.collect()
    if pid is not None:
        with pytest.raises(ChildProcessError):  # no such child any more: it was stopped and reaped
            os.waitpid(pid, os.WNOHANG)
