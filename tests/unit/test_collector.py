"""The API workers' garbage collection policy (workers.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import gevent
import pytest

from workers.collector import NEVER, collect_on_a_timer

pytestmark = pytest.mark.unit


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


def full_collections_while_survivors_pile_up() -> int:
    """How many full collections start by themselves while tracked objects pile up and live on.

    CPython starts one only once the survivors since the last exceed a quarter of the oldest
    generation, which in a test process that has imported everything (and had other tests'
    frozen heaps unfrozen into it) can hold millions: so pile up half that, counted after a
    collection."""
    gc.collect()
    count = 100_000 + len(gc.get_objects(generation=2)) // 2
    before = full_collections()
    kept: list[list[object]] = [[] for _ in range(count)]
    started = full_collections() - before
    del kept
    return started


def test_without_the_policy_survivors_start_full_collections(restored_gc: None) -> None:
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 10)  # CPython's default, whatever an earlier test left
    assert full_collections_while_survivors_pile_up() > 0  # the control: what the policy prevents


def test_full_collections_run_on_the_timer_not_by_themselves(restored_gc: None) -> None:
    young, middle, _ = gc.get_threshold()
    timer = collect_on_a_timer(every_s=3600)
    try:
        assert gc.get_threshold() == (young, middle, NEVER)  # the young generations stay automatic
        assert gc.get_freeze_count() > 0  # what was loaded is out of the collector's walk
        assert full_collections_while_survivors_pile_up() == 0  # none started by itself
    finally:
        timer.kill()
    timer = collect_on_a_timer(every_s=0.05)
    try:
        before = full_collections()
        gevent.sleep(0.3)  # the timer's greenlet runs while this one sleeps
        assert full_collections() > before
    finally:
        timer.kill()
