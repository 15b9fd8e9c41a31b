"""A big plan streamed in chunks (app.scheduler.stream): the chunks and the final plan together
are the unchunked plan, and only plans that may be applied in parts are chunked."""

from __future__ import annotations

import dataclasses

import pytest

from app.scheduler import stream
from app.structs import (
    Allocation,
    Plan,
    RunningAllocation,
    SchedulerConfiguration,
    SchedulerResult,
    Snapshot,
    UpdateStrategy,
)
from tests.support.scheduler_harness import NOW, alloc, evaluation, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit
NODES = [node(f"n{i}", cpu=1000) for i in range(10)]  # 10 placements of 100 CPU per node


def streamed(snap: Snapshot, size: int) -> tuple[list[Plan], SchedulerResult]:
    assert snap.job is not None
    parts = stream(evaluation(snap.job), snap, now_ns=NOW, chunk_placements=size)
    chunks: list[Plan] = []
    while True:
        try:
            chunks.append(next(parts))
        except StopIteration as done:
            return chunks, done.value


def allocations(plans: list[Plan]) -> list[Allocation]:
    return sorted((a for p in plans for allocs in p.node_allocation.values() for a in allocs), key=lambda a: a.id)


def sizes(chunks: list[Plan]) -> list[int]:
    return [sum(len(allocs) for allocs in c.node_allocation.values()) for c in chunks]


@pytest.mark.parametrize("size", [1, 7, 10, 24, 25, 26])
def test_the_chunks_and_the_final_plan_are_the_unchunked_plan(size: int) -> None:
    snap = snapshot(job(groups=[group(count=25)], type="batch"), NODES)
    whole = run(snap)
    chunks, final = streamed(snap, size)
    assert sizes(chunks) == [size] * (25 // size)
    assert allocations([*chunks, final.plan]) == allocations([whole.plan])
    assert (final.queued_allocations, final.failed_tg_allocs) == (whole.queued_allocations, whole.failed_tg_allocs)
    for chunk in chunks:
        assert (chunk.eval_id, chunk.priority, chunk.snapshot_index) == (whole.plan.eval_id, 50, 100)
        assert not (chunk.all_at_once or chunk.node_update or chunk.node_preemptions or chunk.deployment)


def test_a_chunk_is_not_placed_again_in_the_final_plan() -> None:
    snap = snapshot(job(groups=[group(count=25)], type="batch"), NODES)
    chunks, final = streamed(snap, 10)
    assert sizes(chunks) == [10, 10] and len(placed(final)) == 5
    names = [a.name for a in allocations([*chunks, final.plan])]
    assert len(set(names)) == 25


def test_a_pass_that_runs_out_of_room_reports_the_same_failure() -> None:
    snap = snapshot(job(groups=[group(count=120)], type="batch"), NODES)  # room for 100
    whole = run(snap)
    chunks, final = streamed(snap, 30)
    assert sizes(chunks) == [30, 30, 30] and len(placed(final)) == 10
    assert allocations([*chunks, final.plan]) == allocations([whole.plan])
    assert final.failed_tg_allocs == whole.failed_tg_allocs and final.queued_allocations == {"g": 20}


def test_chunking_off_yields_nothing() -> None:
    snap = snapshot(job(groups=[group(count=25)], type="batch"), NODES)
    chunks, final = streamed(snap, 0)
    assert chunks == [] and final == run(snap)


def test_an_all_at_once_plan_is_never_chunked() -> None:
    snap = snapshot(job(groups=[group(count=25)], type="batch", all_at_once=True), NODES)
    chunks, final = streamed(snap, 5)
    assert chunks == [] and final == run(snap) and final.plan.all_at_once


def test_a_plan_with_a_deployment_is_never_chunked() -> None:
    strategy = UpdateStrategy(
        max_parallel=25,
        health_check="task_states",
        min_healthy_time_ns=10**9,
        healthy_deadline_ns=300 * 10**9,
        progress_deadline_ns=600 * 10**9,
        auto_revert=False,
        auto_promote=False,
        canary=0,
        stagger_ns=30 * 10**9,
    )
    snap = snapshot(job(groups=[group(count=25, update=strategy)]), NODES)
    chunks, final = streamed(snap, 5)
    assert chunks == [] and final.plan.deployment is not None and len(placed(final)) == 25


def test_stops_keep_the_rest_of_the_pass_in_one_plan() -> None:
    """An allocation of a removed group is stopped before anything is placed: the stop and the
    placements travel together."""
    old = job(groups=[group("old"), group(count=25)], type="batch")
    current = job(groups=[group(count=25)], type="batch", version=1)
    snap = snapshot(current, NODES, [alloc(old, NODES[0], group_name="old")])
    chunks, final = streamed(snap, 5)
    assert chunks == [] and final == run(snap) and final.plan.node_update and len(placed(final)) == 25


def test_in_place_updates_keep_the_pass_in_one_plan() -> None:
    old = job(groups=[group(count=2)], type="batch")
    more = job(groups=[group(count=27)], type="batch", version=1)  # same tasks: the two update in place
    snap = snapshot(more, NODES, [alloc(old, NODES[0], 0), alloc(old, NODES[1], 1)], versions=[old])
    chunks, final = streamed(snap, 5)
    whole = run(snap)
    assert chunks == [] and final == whole and len(placed(final)) == 27  # 2 updated in place, 25 new


def test_evictions_after_some_chunks_travel_with_the_placements_they_make_room_for() -> None:
    """Forty placements fit on the free nodes and go in chunks; the rest need preemption, and
    from the first eviction on everything stays in the final plan."""
    free = [node(f"free{i}", cpu=1000) for i in range(4)]
    full = [node(f"full{i}") for i in range(2)]
    filler = job("filler", [group("work", tasks=[task(cpu=4000, mem=8192)])], type="batch", priority=20)
    others = [alloc(filler, n, i) for i, n in enumerate(full)]
    running = {a.node_id: (RunningAllocation(a, 20),) for a in others}
    config = SchedulerConfiguration(preempt_batch=True)
    urgent = job("urgent", [group(count=45)], type="batch", priority=80)
    snap = dataclasses.replace(snapshot(urgent, free + full, others=others), config=config, preemptible=running)
    whole = run(snap)
    chunks, final = streamed(snap, 7)  # the 41st placement evicts; a chunk would be due at the 42nd
    assert sizes(chunks) == [7] * 5 and not any(c.node_preemptions for c in chunks)
    assert final.plan.node_preemptions and len(placed(final)) == 10
    assert allocations([*chunks, final.plan]) == allocations([whole.plan])
    assert final.plan.node_preemptions == whole.plan.node_preemptions
