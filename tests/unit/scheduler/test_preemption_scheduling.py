"""Preemption inside scheduling passes: the second try when nothing fits, per scheduler type
and configuration, and what the plan records."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence

import pytest

from app.structs import (
    Allocation,
    AllocationStop,
    Job,
    Node,
    RunningAllocation,
    SchedulerConfiguration,
    SchedulerResult,
    Snapshot,
)
from tests.support.scheduler_harness import alloc, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit
ALL_ON = SchedulerConfiguration(preempt_service=True, preempt_batch=True, preempt_sysbatch=True)


def filled(nodes: Sequence[Node], priority: int = 20) -> list[Allocation]:
    """Each node completely taken by one allocation of a low-priority batch job."""
    filler = job("filler", [group("work", tasks=[task(cpu=4000, mem=8192)])], type="batch", priority=priority)
    return [alloc(filler, n, i) for i, n in enumerate(nodes)]


def with_preemptible(
    snap: Snapshot, others: Sequence[Allocation], priority: int, config: SchedulerConfiguration
) -> Snapshot:
    running: dict[uuid.UUID, list[RunningAllocation]] = {}
    for a in others:
        running.setdefault(a.node_id, []).append(RunningAllocation(a, priority))
    return dataclasses.replace(
        snap,
        config=config,
        preemptible={n: tuple(items) for n, items in running.items()},
    )


def cluster(j: Job, config: SchedulerConfiguration, filler_priority: int = 20) -> tuple[Snapshot, list[Allocation]]:
    nodes = [node("a"), node("b")]
    others = filled(nodes, filler_priority)
    return with_preemptible(snapshot(j, nodes, others=others), others, filler_priority, config), others


def evictions(result: SchedulerResult) -> dict[uuid.UUID, AllocationStop]:
    return {s.alloc_id: s for stops in result.plan.node_preemptions.values() for s in stops}


def test_service_job_preempts_only_when_service_preemption_is_enabled() -> None:
    j = job("web", [group("g", 1, tasks=[task(cpu=1000, mem=1024)])], priority=80)
    disabled, _ = cluster(j, SchedulerConfiguration())
    blocked = run(disabled)
    assert not placed(blocked) and "g" in blocked.failed_tg_allocs and not blocked.plan.node_preemptions

    enabled, others = cluster(j, ALL_ON)
    result = run(enabled)
    [new] = placed(result)
    evicted = evictions(result)
    assert len(evicted) == 1 and not result.failed_tg_allocs
    [stop] = evicted.values()
    victim = next(a for a in others if a.id == stop.alloc_id)
    assert victim.node_id == new.node_id
    assert new.preempted_allocations == (victim.id,)
    assert stop.desired_status == "evict" and stop.preempted_by == new.id
    assert stop.description == f"Preempted by alloc ID {new.id}"


def test_system_job_preempts_by_default() -> None:
    j = job("agent", [group("g", 1, tasks=[task(cpu=500, mem=256)])], type="system", priority=90)
    snap, _ = cluster(j, SchedulerConfiguration())
    result = run(snap)
    assert len(placed(result)) == 2 and len(evictions(result)) == 2
    assert not result.failed_tg_allocs


def test_priority_within_ten_is_not_preempted() -> None:
    j = job("web", [group("g", 1, tasks=[task(cpu=1000, mem=1024)])], priority=29)
    snap, _ = cluster(j, ALL_ON, filler_priority=20)
    result = run(snap)
    assert not placed(result) and not evictions(result) and result.failed_tg_allocs


def test_each_placement_evicts_different_work() -> None:
    j = job("web", [group("g", 2, tasks=[task(cpu=3000, mem=4096)])], priority=80)
    snap, _ = cluster(j, ALL_ON)
    result = run(snap)
    new = placed(result)
    assert len(new) == 2 and len(evictions(result)) == 2
    assert {a.node_id for a in new} == {node("a").id, node("b").id}
    assert len({v for a in new for v in a.preempted_allocations}) == 2
