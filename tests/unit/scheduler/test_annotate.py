"""DesiredTGUpdates read off a pass's plan: create, in-place, destructive, stop, ignore."""

from __future__ import annotations

import pytest

from app.scheduler.annotate import desired_updates
from tests.support.scheduler_harness import alloc, group, job, node, run, snapshot, task

pytestmark = pytest.mark.unit


def test_new_job_places_everything() -> None:
    j = job("web", [group("g", 3)])
    snap = snapshot(j, [node("a")])
    updates = desired_updates(snap, run(snap))
    assert (updates["g"].place, updates["g"].ignore, updates["g"].changes) == (3, 0, True)


def test_unchanged_job_ignores_its_allocations() -> None:
    j = job("web", [group("g", 2)])
    n = node("a")
    snap = snapshot(j, [n], [alloc(j, n, 0), alloc(j, n, 1)])
    updates = desired_updates(snap, run(snap))
    assert updates["g"].ignore == 2 and not updates["g"].changes


def test_destructive_in_place_and_scale_down() -> None:
    n = node("a")
    old = job("web", [group("g", 2, tasks=[task(cpu=100)])], version=0)
    bigger = job("web", [group("g", 2, tasks=[task(cpu=200)])], version=1)
    snap = snapshot(bigger, [n], [alloc(old, n, 0), alloc(old, n, 1)], versions=[old])
    assert desired_updates(snap, run(snap))["g"].destructive_update == 2

    fewer = job("web", [group("g", 1, tasks=[task(cpu=100)])], version=1)
    snap = snapshot(fewer, [n], [alloc(old, n, 0), alloc(old, n, 1)], versions=[old])
    updates = desired_updates(snap, run(snap))["g"]
    assert (updates.stop, updates.in_place_update, updates.place) == (1, 1, 0)


def test_failed_placements_still_count_as_creates() -> None:
    j = job("web", [group("g", 2, tasks=[task(cpu=5000)])])
    snap = snapshot(j, [node("a", cpu=4000)])
    result = run(snap)
    assert result.failed_tg_allocs and desired_updates(snap, result)["g"].place == 2
