"""Reconciliation of service and batch jobs, end to end through process()."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.scheduler import reasons
from app.structs import Constraint, Job, ReschedulePolicy
from app.wire.job import JobType
from tests.support.scheduler_harness import (
    HOUR,
    NOW,
    alloc,
    apply,
    group,
    job,
    live,
    node,
    placed,
    run,
    snapshot,
    stopped,
    task,
)

pytestmark = pytest.mark.unit

NODES = [node(f"n{i}") for i in range(4)]
UNLIMITED = ReschedulePolicy(0, 0, 0, "constant", 0, unlimited=True)
ONCE_A_DAY = ReschedulePolicy(1, 24 * HOUR, 0, "constant", 0, unlimited=False)


def test_places_count_with_lowest_names_and_plan_fields() -> None:
    j = job(groups=[group(count=3)], priority=70, all_at_once=True)
    result = run(snapshot(j, NODES))
    allocs = placed(result)
    assert sorted(a.name for a in allocs) == ["web.g[0]", "web.g[1]", "web.g[2]"]
    assert all(a.desired_status == "run" and a.client_status == "pending" for a in allocs)
    assert all(a.node_name and a.job_version == 0 and a.resources == j.task_groups[0].resources for a in allocs)
    assert all(a.id.version == 4 for a in allocs)
    assert result.plan.priority == 70 and result.plan.all_at_once and result.plan.snapshot_index == 100
    assert result.queued_allocations == {"g": 0} and not result.failed_tg_allocs


def test_missing_indexes_are_reused_lowest_first() -> None:
    j = job(groups=[group(count=4)])
    existing = [alloc(j, NODES[0], 0), alloc(j, NODES[1], 2)]
    names = sorted(a.name for a in placed(run(snapshot(j, NODES, existing))))
    assert names == ["web.g[1]", "web.g[3]"]


def test_surplus_stops_highest_indexes() -> None:
    j = job(groups=[group(count=2)])
    existing = [alloc(j, NODES[i % 4], i) for i in range(5)]
    result = run(snapshot(j, NODES, existing))
    stops = stopped(result)
    assert {a.index for a in existing if a.id in stops} == {2, 3, 4}
    assert all(s.description == reasons.NOT_NEEDED for s in stops.values())
    assert not placed(result)


def test_steady_state_is_a_noop() -> None:
    j = job(groups=[group(count=2)])
    assert run(snapshot(j, NODES, [alloc(j, NODES[0], 0), alloc(j, NODES[1], 1)])).plan.is_noop


@pytest.mark.parametrize(("j", "description"), [(None, reasons.JOB_MISSING), ("stopped", reasons.JOB_STOPPED)])
def test_stopped_or_missing_job_stops_everything(j: object, description: str) -> None:
    base = job(groups=[group(count=2)])
    existing = [alloc(base, NODES[0], 0), alloc(base, NODES[1], 1), alloc(base, NODES[2], 2, client="complete")]
    the_job = dataclasses.replace(base, stop=True) if j == "stopped" else None
    result = run(snapshot(the_job, NODES, existing))
    stops = stopped(result)
    assert set(stops) == {existing[0].id, existing[1].id}  # terminal ones are left alone
    assert all(s.description == description for s in stops.values())
    assert not placed(result)


def test_removed_group_is_stopped() -> None:
    old = job(groups=[group("a"), group("b")])
    new = job(groups=[group("a")], version=1)
    existing = [alloc(old, NODES[0], group_name="a", version=1), alloc(old, NODES[1], group_name="b")]
    result = run(snapshot(new, NODES, existing, versions=[old]))
    assert set(stopped(result)) == {existing[1].id}


def test_lost_allocations_are_stopped_as_lost_and_replaced() -> None:
    down = node("down", status="down")
    j = job(groups=[group(count=2)])
    gone = dataclasses.replace(alloc(j, NODES[0], 1), node_id=node("vanished").id)
    existing = [alloc(j, down, 0), gone]
    result = run(snapshot(j, [*NODES, down], existing))
    stops = stopped(result)
    assert {s.client_status for s in stops.values()} == {"lost"}
    assert {s.description for s in stops.values()} == {reasons.LOST}
    new = placed(result)
    assert {a.previous_allocation for a in new} == {existing[0].id, gone.id}
    assert {a.name for a in new} == {"web.g[0]", "web.g[1]"}
    assert all(a.node_id != down.id for a in new)


def test_migrating_allocations_on_draining_nodes_move() -> None:
    draining = node("drain", draining=True)
    j = job(groups=[group(count=1)])
    existing = [alloc(j, draining, 0, desired_transition={"Migrate": True})]
    result = run(snapshot(j, [*NODES, draining], existing))
    assert stopped(result)[existing[0].id].description == reasons.MIGRATING
    (new,) = placed(result)
    assert new.previous_allocation == existing[0].id and new.node_id != draining.id


def test_allocations_on_draining_node_without_migrate_stay() -> None:
    draining = node("drain", draining=True)
    j = job(groups=[group(count=1)])
    assert run(snapshot(j, [*NODES, draining], [alloc(j, draining, 0)])).plan.is_noop


def _versions(change: dict[str, Any], group_change: dict[str, Any] | None = None) -> tuple[Job, Job]:
    old = job(groups=[group(count=1, tasks=[task()])])
    new_task = dataclasses.replace(task(), **change)
    new_group = dataclasses.replace(group(count=1, tasks=[new_task]), **(group_change or {}))
    return old, job(groups=[new_group], version=1)


@pytest.mark.parametrize(
    ("change", "group_change", "inplace"),
    [
        ({}, None, True),  # only the version moved
        ({"constraints": ()}, {"count": 1}, True),
        ({"driver": "raw_exec"}, None, False),
        ({"config": {"command": "/bin/other"}}, None, False),
        ({"env": {"A": "1"}}, None, False),
        ({"meta": {"owner": "x"}}, None, False),
        ({"resources": task(cpu=200).resources}, None, False),
        ({}, {"ephemeral_disk_mb": 500}, False),
        ({}, {"networks": group(static_ports=[8080]).networks}, False),
        ({}, {"tasks": (task(), task("sidecar"))}, False),
        ({"name": "renamed"}, None, False),
    ],
)
def test_in_place_versus_destructive(
    change: dict[str, Any], group_change: dict[str, Any] | None, inplace: bool
) -> None:
    old, new = _versions(change, group_change)
    existing = alloc(old, NODES[0], 0)
    result = run(snapshot(new, NODES, [existing], versions=[old]))
    (updated,) = placed(result)
    assert updated.job_version == 1
    if inplace:
        assert updated.id == existing.id and updated.node_id == existing.node_id and not stopped(result)
    else:
        assert updated.id != existing.id and updated.previous_allocation == existing.id
        assert stopped(result)[existing.id].description == reasons.UPDATING


def test_unknown_old_version_is_destructive() -> None:
    old, new = _versions({})
    existing = alloc(old, NODES[0], 0)
    result = run(snapshot(new, NODES, [existing]))  # version 0 not provided
    assert existing.id in stopped(result)


def test_node_no_longer_feasible_makes_update_destructive() -> None:
    old = job(groups=[group(count=1)])
    new = job(groups=[group(count=1, constraints=[_c("${node.unique.name}", "!=", "n0")])], version=1)
    existing = alloc(old, NODES[0], 0)
    result = run(snapshot(new, NODES, [existing], versions=[old]))
    (replacement,) = placed(result)
    assert replacement.id != existing.id and replacement.node_id != NODES[0].id


def test_destructive_update_that_cannot_be_placed_keeps_the_old_allocation() -> None:
    old = job(groups=[group(count=1)])
    new = job(groups=[group(count=1, tasks=[task(cpu=100_000)])], version=1)
    result = run(snapshot(new, NODES[:1], [alloc(old, NODES[0], 0)], versions=[old]))
    assert result.plan.is_noop
    assert result.queued_allocations == {"g": 1} and "g" in result.failed_tg_allocs


def test_batch_completed_allocations_count_and_are_not_replaced() -> None:
    j = job(groups=[group(count=3)], type="batch")
    existing = [alloc(j, NODES[0], 0, client="complete"), alloc(j, NODES[1], 1)]
    (new,) = placed(run(snapshot(j, NODES, existing)))
    assert new.name == "web.g[2]"


def test_service_completed_allocations_are_replaced() -> None:
    j = job(groups=[group(count=1)])
    (new,) = placed(run(snapshot(j, NODES, [alloc(j, NODES[0], 0, client="complete")])))
    assert new.name == "web.g[0]"


@pytest.mark.parametrize("job_type", ["service", "batch"])
def test_failed_allocations_are_rescheduled_with_a_tracker(job_type: JobType) -> None:
    j = job(groups=[group(count=1, reschedule=UNLIMITED)], type=job_type)
    failed = alloc(j, NODES[0], 0, client="failed")
    result = run(snapshot(j, NODES, [failed]))
    assert stopped(result)[failed.id].description == reasons.RESCHEDULED
    (new,) = placed(result)
    assert new.previous_allocation == failed.id and new.name == failed.name
    assert new.node_id != failed.node_id  # the previous node is penalised
    assert new.reschedule_tracker is not None
    (event,) = new.reschedule_tracker["Events"]
    assert event["PrevAllocID"] == str(failed.id) and event["RescheduleTime"] == NOW


@pytest.mark.parametrize(
    ("events_ago", "rescheduled"),
    [((), True), ((HOUR,), False), ((25 * HOUR,), True)],
)
def test_reschedule_attempts_within_interval(events_ago: tuple[int, ...], rescheduled: bool) -> None:
    j = job(groups=[group(count=1, reschedule=ONCE_A_DAY)], type="batch")
    tracker = {"Events": [{"RescheduleTime": NOW - ago} for ago in events_ago]}
    failed = alloc(j, NODES[0], 0, client="failed", reschedule_tracker=tracker)
    result = run(snapshot(j, NODES, [failed]))
    assert bool(placed(result)) is rescheduled
    assert (failed.id in stopped(result)) is rescheduled


def test_failed_without_policy_keeps_its_slot() -> None:
    j = job(groups=[group(count=1)])
    assert run(snapshot(j, NODES, [alloc(j, NODES[0], 0, client="failed")])).plan.is_noop


@pytest.mark.parametrize("policy", [None, "exhausted"])
def test_force_reschedule_replaces_a_failed_allocation_whatever_the_policy(policy: str | None) -> None:
    """Nomad's `job eval -force-reschedule` (DesiredTransition.ForceReschedule): at once, even
    with no reschedule policy or no attempts left."""
    reschedule = ONCE_A_DAY if policy else None
    j = job(groups=[group(count=1, reschedule=reschedule)], type="batch")
    tracker = {"Events": [{"RescheduleTime": NOW - HOUR}]}
    failed = alloc(j, NODES[0], 0, client="failed", reschedule_tracker=tracker)
    assert run(snapshot(j, NODES, [failed])).plan.is_noop
    forced = dataclasses.replace(failed, desired_transition={"ForceReschedule": True})
    result = run(snapshot(j, NODES, [forced]))
    assert stopped(result)[failed.id].description == reasons.RESCHEDULED
    (new,) = placed(result)
    assert new.previous_allocation == failed.id


def test_already_replaced_failed_allocation_is_ignored() -> None:
    j = job(groups=[group(count=1, reschedule=UNLIMITED)])
    failed = alloc(j, NODES[0], 0, client="failed")
    replacement = alloc(j, NODES[1], 0, previous_allocation=failed.id)
    assert run(snapshot(j, NODES, [failed, replacement])).plan.is_noop


def test_count_zero_stops_all() -> None:
    j = job(groups=[group(count=0)])
    existing = [alloc(j, NODES[0], 0)]
    assert set(stopped(run(snapshot(j, NODES, existing)))) == {existing[0].id}


def test_second_pass_after_apply_is_noop() -> None:
    j = job(groups=[group("a", 3), group("b", 2)])
    snap = snapshot(j, NODES)
    after = apply(snap, run(snap))
    assert len(live(after, "a")) == 3 and len(live(after, "b")) == 2
    assert run(after, key="again").plan.is_noop


def _c(left: str, operand: str, right: str) -> Constraint:
    return Constraint(left, operand, right)
