"""The second core (kb.parallel): work in a forked child, the same answer as doing it all here."""

from __future__ import annotations

import os
import select
import threading

import pytest

from conftest import children
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
    """The child works from the front, this process from the back once it asks for the result, and they meet.
    The two take turns at the start so that each does some (a fast child could otherwise do every item)."""
    parent = os.getpid()
    child_began, tell_parent = os.pipe()
    parent_began, tell_child = os.pipe()
    done = []  # items done by this process, or, in the child, by the child (its own copy)

    def takes_turns(items):
        done.append(items)
        if os.getpid() != parent and len(done) == 1:
            os.write(tell_parent, b"x")  # the child has its first item...
            select.select([parent_began], [], [], 30)  # ...and waits until this process has taken one too
        elif os.getpid() == parent and len(done) == 1:
            os.write(tell_child, b"x")
        return one_each(items)

    forked = parallel.can_fork(ITEMS)  # two cores, no other thread
    shared = parallel.Shared(takes_turns, ITEMS)
    if forked:
        os.read(child_began, 1)  # the parent's other work lasts until the child has begun
    got = shared.result()  # then it takes, from the back, what the child has not yet taken
    for fd in (child_began, tell_parent, parent_began, tell_child):
        os.close(fd)
    assert [r["item"] for r in got] == ITEMS
    if forked:
        child_items = [r["item"] for r in got if r["pid"] != parent]
        assert child_items and child_items == ITEMS[:len(child_items)]  # the child works from the front
        assert len(child_items) < len(ITEMS) and {r["pid"] for r in got[len(child_items):]} == {parent}


def test_items_that_come_one_at_a_time_are_worked_on_from_the_first_ones():
    """kb build adds each record as it is validated: once `minimum` have come, a child works on them while more
    come; when that child has taken all of its own, the ones that came since go to another. The result is fn's
    for every item, in order, each item done once. This process asks for the result once the first child has
    taken an item (on a busy machine a child can start so late that this process would take every item)."""
    parent = os.getpid()
    child_began, tell_parent = os.pipe()

    def tells(items):
        if os.getpid() != parent:
            os.write(tell_parent, b"x")
        return one_each(items)

    ahead = parallel.Ahead(tells, minimum=10)
    forked = parallel.can_fork(ITEMS, 10)
    for i in ITEMS[:9]:
        ahead.add(i)
    assert not ahead.batches  # fewer than `minimum`: nothing started yet
    ahead.add(9)
    if forked:
        assert ahead.batches and ahead.batches[0].pid is not None  # the first child began with the tenth item
    for i in ITEMS[10:]:
        ahead.add(i)
    if forked:
        select.select([child_began], [], [], 30)  # only the first child can have begun before its items are taken
    got = ahead.result()
    os.close(child_began)
    os.close(tell_parent)
    assert [r["item"] for r in got] == ITEMS
    if forked:
        assert {r["pid"] for r in got[:10]} != {parent}  # the first items' child did some of them
    assert not children()  # every child has ended and been reaped


def test_a_child_working_ahead_that_fails_has_its_items_done_here_and_stopping_leaves_no_child():
    parent = os.getpid()

    def fails_in_a_child(items):
        if os.getpid() != parent:
            os._exit(3)
        return one_each(items)

    ahead = parallel.Ahead(fails_in_a_child, minimum=10)
    for i in ITEMS:
        ahead.add(i)
    got = ahead.result()
    assert [r["item"] for r in got] == ITEMS and {r["pid"] for r in got} == {parent}

    stop = threading.Event()
    slow = parallel.Ahead(lambda items: stop.wait(60) and one_each(items), minimum=10)
    for i in ITEMS:
        slow.add(i)
    slow.close()
    slow.stop()  # a build that failed: its children are stopped and reaped, not left running
    assert not children()
