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


def survivors(count: int) -> list[list[object]]:
    """Tracked objects that live on: what makes CPython start full collections by itself."""
    return [[] for _ in range(count)]


def test_without_the_policy_survivors_start_full_collections(restored_gc: None) -> None:
    before = full_collections()
    kept = survivors(300_000)
    assert full_collections() > before  # the control: what the policy prevents
    del kept


def test_full_collections_run_on_the_timer_not_by_themselves(restored_gc: None) -> None:
    young, middle, _ = gc.get_threshold()
    timer = collect_on_a_timer(every_s=3600)
    try:
        assert gc.get_threshold() == (young, middle, NEVER)  # the young generations stay automatic
        assert gc.get_freeze_count() > 0  # what was loaded is out of the collector's walk
        before = full_collections()
        kept = survivors(300_000)
        assert full_collections() == before  # none started by itself
        del kept
    finally:
        timer.kill()
    timer = collect_on_a_timer(every_s=0.05)
    try:
        before = full_collections()
        gevent.sleep(0.3)  # the timer's greenlet runs while this one sleeps
        assert full_collections() > before
    finally:
        timer.kill()
