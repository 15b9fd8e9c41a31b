"""The room a batch's earlier plans take, laid over the snapshot of a later pass (pure)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from app.pipeline.batch_overlay import combine, taken_by, with_taken
from app.structs import Allocation, Job, NodeUsage, Plan, Resources
from tests.support.scheduler_harness import group, job, node, pending_alloc, placed, run, snapshot, task

pytestmark = pytest.mark.unit
N1 = node("n1", cpu=1000)


def plan_of(*allocs: Allocation) -> Plan:
    return Plan(eval_id=uuid.uuid4(), priority=50, snapshot_index=100, node_allocation={N1.id: allocs})


def test_only_a_plans_new_allocations_take_room() -> None:
    kept = pending_alloc(N1.id, 300)  # in the snapshot already: an in-place update of it takes nothing more
    fresh = pending_alloc(N1.id, 200, port=8080)
    taken = taken_by(plan_of(kept, fresh), snapshot(job(), [N1], [kept]))
    assert taken == {N1.id: NodeUsage(Resources(cpu=200, memory_mb=64, disk_mb=10), frozenset({8080}))}


def test_taken_room_adds_up_and_is_charged_on_top_of_the_snapshot() -> None:
    other = uuid.UUID(int=2)
    a = {N1.id: NodeUsage(Resources(cpu=200), frozenset({80}))}
    b = {N1.id: NodeUsage(Resources(cpu=300), frozenset({443})), other: NodeUsage(Resources(cpu=1))}
    both = combine(a, b)
    assert both == {N1.id: NodeUsage(Resources(cpu=500), frozenset({80, 443})), other: NodeUsage(Resources(cpu=1))}
    read = dataclasses.replace(snapshot(job(), [N1]), usage={N1.id: NodeUsage(Resources(cpu=100))})
    laid = with_taken(read, both)
    assert laid.usage[N1.id] == NodeUsage(Resources(cpu=600), frozenset({80, 443}))
    assert read.usage[N1.id] == NodeUsage(Resources(cpu=100))  # the shared read is left as it was
    assert with_taken(read, {}) is read


def test_a_later_pass_of_the_batch_does_not_place_on_room_an_earlier_plan_took() -> None:
    def big(job_id: str) -> Job:
        return job(job_id, [group(tasks=[task(cpu=800)])], type="batch")

    read = snapshot(big("first"), [N1])
    first = run(read, key="first")
    assert len(placed(first)) == 1
    second = dataclasses.replace(read, job=big("second"))
    assert placed(run(second, key="second")), "on its own the node has room for the second job"
    result = run(with_taken(second, taken_by(first.plan, read)), key="second")
    assert placed(result) == []
    assert set(result.failed_tg_allocs) == {"g"}
