"""Deployments in the pure generic scheduler: creation, max_parallel gated by health, canaries
and promotion, pause and failure, completion, cancellation, unhealthy replacement."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from app.scheduler import reasons
from app.scheduler.deployments import (
    CANCELLED_NEWER,
    CANCELLED_STOPPED,
    NEEDS_PROMOTION,
    PENDING_AUTO_PROMOTION,
    SUCCESSFUL,
)
from app.structs import Allocation, Deployment, DeploymentGroup, Job, Snapshot, UpdateStrategy
from app.wire.deployment import DeploymentStatus
from tests.support.scheduler_harness import NOW, alloc, group, job, node, placed, run, snapshot, stopped, task

pytestmark = pytest.mark.unit

SECOND = 10**9


def update(max_parallel: int = 1, **kw: Any) -> UpdateStrategy:
    values: dict[str, Any] = {
        "max_parallel": max_parallel,
        "health_check": "task_states",
        "min_healthy_time_ns": 10 * SECOND,
        "healthy_deadline_ns": 300 * SECOND,
        "progress_deadline_ns": 600 * SECOND,
        "auto_revert": False,
        "auto_promote": False,
        "canary": 0,
        "stagger_ns": 30 * SECOND,
    }
    values.update(kw)
    return UpdateStrategy(**values)


def web(version: int, count: int, strategy: UpdateStrategy | None, image: str = "") -> Job:
    tasks = (task(config={"image": image or f"v{version}"}),)
    return job(groups=[group(count=count, tasks=tasks, update=strategy)], version=version, create_index=7)


def deployment(j: Job, *, status: DeploymentStatus = "running", **group_state: Any) -> Deployment:
    state = DeploymentGroup(desired_total=j.task_groups[0].count, progress_deadline_ns=600 * SECOND)
    return Deployment(
        id=uuid.UUID(int=42),
        namespace="default",
        job_id=j.id,
        job_version=j.version,
        job_create_index=j.create_index,
        status=status,
        groups={"g": dataclasses.replace(state, **group_state)},
    )


def with_deployment(snap: Snapshot, d: Deployment | None) -> Snapshot:
    return dataclasses.replace(snap, deployment=d)


N1 = node("n1", cpu=100_000, mem=100_000)


def old_allocs(j: Job, count: int) -> list[Allocation]:
    return [alloc(j, N1, i) for i in range(count)]


def test_first_registration_creates_a_deployment_and_places_everything() -> None:
    j = web(0, 3, update(max_parallel=1))
    result = run(snapshot(j, [N1]))
    d = result.plan.deployment
    assert d is not None and d.status == "running" and d.job_version == 0 and d.job_create_index == 7
    assert d.groups["g"].desired_total == 3
    assert d.groups["g"].require_progress_by_ns == NOW + 600 * SECOND
    new = placed(result)
    assert len(new) == 3  # a fresh job is not rate-limited: nothing is out of service
    assert {a.deployment_id for a in new} == {d.id}


def test_no_update_block_or_max_parallel_zero_means_no_deployment() -> None:
    for strategy in (None, update(max_parallel=0)):
        old = web(0, 3, strategy)
        new = web(1, 3, strategy)
        result = run(snapshot(new, [N1], old_allocs(old, 3), versions=[old]))
        assert result.plan.deployment is None
        assert len(placed(result)) == 3 and len(stopped(result)) == 3  # all at once


def test_destructive_update_goes_max_parallel_at_a_time() -> None:
    old, new = web(0, 5, update(max_parallel=2)), web(1, 5, update(max_parallel=2))
    result = run(snapshot(new, [N1], old_allocs(old, 5), versions=[old]))
    assert result.plan.deployment is not None and result.plan.deployment.job_version == 1
    assert sorted(a.name for a in placed(result)) == ["web.g[0]", "web.g[1]"]
    assert len(stopped(result)) == 2
    assert all(s.description == reasons.UPDATING for s in stopped(result).values())


def rolled(new: Job, old: Job, healthy: list[bool | None]) -> Snapshot:
    """Old allocations with the first len(healthy) already replaced in deployment 42."""
    d = deployment(new)
    allocs = []
    for i in range(new.task_groups[0].count):
        if i < len(healthy):
            allocs.append(alloc(new, N1, i, deployment_id=d.id, healthy=healthy[i]))
        else:
            allocs.append(alloc(old, N1, i))
    return with_deployment(snapshot(new, [N1], allocs, versions=[old]), d)


def test_next_batch_waits_for_the_health_of_the_previous_one() -> None:
    old, new = web(0, 5, update(max_parallel=2)), web(1, 5, update(max_parallel=2))
    assert placed(run(rolled(new, old, [None, None]))) == []
    assert len(placed(run(rolled(new, old, [True, None])))) == 1
    assert sorted(a.name for a in placed(run(rolled(new, old, [True, True])))) == ["web.g[2]", "web.g[3]"]
    assert placed(run(rolled(new, old, [True, False]))) == []  # an unhealthy one stops the rollout


def test_paused_or_failed_deployment_updates_nothing() -> None:
    old, new = web(0, 3, update(max_parallel=2)), web(1, 3, update(max_parallel=2))
    for status in ("paused", "failed"):
        snap = rolled(new, old, [True])
        snap = with_deployment(snap, dataclasses.replace(deployment(new), status=status))
        result = run(snap)
        assert placed(result) == [] and stopped(result) == {}


def test_deployment_is_successful_once_every_allocation_is_healthy() -> None:
    old, new = web(0, 2, update()), web(1, 2, update())
    result = run(rolled(new, old, [True, True]))
    assert [(u.status, u.description) for u in result.plan.deployment_updates] == [("successful", SUCCESSFUL)]
    unfinished = run(rolled(new, old, [True, None]))
    assert unfinished.plan.deployment_updates == ()


def test_canaries_are_placed_beside_the_old_allocations_and_wait_for_promotion() -> None:
    old, new = web(0, 3, update(canary=1)), web(1, 3, update(canary=1))
    result = run(snapshot(new, [N1], old_allocs(old, 3), versions=[old]))
    (canary,) = placed(result)
    assert canary.canary and canary.name == "web.g[0]" and stopped(result) == {}
    d = result.plan.deployment
    assert d is not None and d.groups["g"].desired_canaries == 1 and d.status_description == NEEDS_PROMOTION
    # Healthy canary, not promoted: nothing more happens.
    canary = dataclasses.replace(canary, healthy=True)
    waiting = with_deployment(snapshot(new, [N1], [*old_allocs(old, 3), canary], versions=[old]), d)
    again = run(waiting)
    assert placed(again) == [] and stopped(again) == {} and again.plan.deployment_updates == ()


def test_auto_promote_canaries_describe_pending_automatic_promotion() -> None:
    old, new = web(0, 2, update(canary=1, auto_promote=True)), web(1, 2, update(canary=1, auto_promote=True))
    result = run(snapshot(new, [N1], old_allocs(old, 2), versions=[old]))
    assert result.plan.deployment is not None
    assert result.plan.deployment.status_description == PENDING_AUTO_PROMOTION


def test_after_promotion_the_canary_replaces_its_namesake_and_the_rest_roll() -> None:
    old, new = web(0, 3, update(canary=1)), web(1, 3, update(canary=1))
    d = deployment(new, desired_canaries=1, promoted=True)
    promoted = alloc(new, N1, 0, key="canary", deployment_id=d.id, healthy=True)  # no longer `canary` once promoted
    snap = with_deployment(snapshot(new, [N1], [*old_allocs(old, 3), promoted], versions=[old]), d)
    result = run(snap)
    stops = stopped(result)
    assert alloc(old, N1, 0).id in stops and promoted.id not in stops
    assert [a.name for a in placed(result)] == ["web.g[1]"]  # max_parallel 1 of the remaining two


def test_unpromoted_canaries_of_a_failed_deployment_are_stopped() -> None:
    old, new = web(0, 2, update(canary=1)), web(1, 2, update(canary=1))
    d = deployment(new, status="failed", desired_canaries=1)
    canary = alloc(new, N1, 0, key="canary", deployment_id=d.id, healthy=False, canary=True)
    result = run(with_deployment(snapshot(new, [N1], [*old_allocs(old, 2), canary], versions=[old]), d))
    assert stopped(result)[canary.id].description == reasons.CANARY_NOT_NEEDED
    assert placed(result) == []


def test_outdated_or_stopped_deployments_are_cancelled() -> None:
    old, new = web(0, 2, update()), web(1, 2, update())
    result = run(with_deployment(snapshot(new, [N1], old_allocs(old, 2), versions=[old]), deployment(old)))
    assert (result.plan.deployment_updates[0].status, result.plan.deployment_updates[0].description) == (
        "cancelled",
        CANCELLED_NEWER,
    )
    assert result.plan.deployment is not None and result.plan.deployment.job_version == 1
    stopped_job = dataclasses.replace(old, stop=True)
    result = run(with_deployment(snapshot(stopped_job, [N1], old_allocs(old, 2)), deployment(old)))
    assert [(u.status, u.description) for u in result.plan.deployment_updates] == [("cancelled", CANCELLED_STOPPED)]
    finished = dataclasses.replace(deployment(old), status="successful")
    result = run(with_deployment(snapshot(stopped_job, [N1], old_allocs(old, 2)), finished))
    assert result.plan.deployment_updates == ()


def test_unchanged_job_does_not_start_a_deployment() -> None:
    j = web(0, 2, update())
    result = run(snapshot(j, [N1], [alloc(j, N1, 0), alloc(j, N1, 1)]))
    assert result.plan.is_noop


def test_unhealthy_allocation_marked_for_reschedule_is_replaced() -> None:
    from app.structs import ReschedulePolicy

    unlimited = ReschedulePolicy(0, 0, 30 * SECOND, "exponential", 3600 * SECOND, True)
    j = job(groups=[group(count=2, update=update(), reschedule=unlimited)], create_index=7)
    d = deployment(j)
    bad = alloc(j, N1, 0, deployment_id=d.id, healthy=False, desired_transition={"Reschedule": True})
    good = alloc(j, N1, 1, deployment_id=d.id, healthy=True)
    result = run(with_deployment(snapshot(j, [N1], [bad, good]), d))
    (replacement,) = placed(result)
    assert replacement.previous_allocation == bad.id and replacement.deployment_id == d.id
    assert stopped(result)[bad.id].description == reasons.UNHEALTHY


def test_system_rolling_update_goes_max_parallel_per_pass_and_asks_for_a_staggered_followup() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    strategy = update(max_parallel=1, stagger_ns=30 * SECOND)

    def system(version: int) -> Job:
        tasks = (task(config={"image": f"v{version}"}),)
        return job(groups=[group(count=1, tasks=tasks, update=strategy)], type="system", version=version)

    old, new = system(0), system(1)
    allocs = [alloc(old, n, 0) for n in nodes]
    result = run(snapshot(new, nodes, allocs, versions=[old]))
    assert len(placed(result)) == 1 and len(stopped(result)) == 1
    assert result.rolling_wait_ns == 30 * SECOND
    unrolled = dataclasses.replace(strategy, stagger_ns=0)
    everything = job(
        groups=[group(count=1, tasks=(task(config={"image": "v1"}),), update=unrolled)], type="system", version=1
    )
    result = run(snapshot(everything, nodes, allocs, versions=[old]))
    assert len(placed(result)) == 4 and result.rolling_wait_ns == 0


def test_job_plan_annotations_count_canaries() -> None:
    from app.scheduler.annotate import desired_updates

    old, new = web(0, 3, update(canary=2)), web(1, 3, update(canary=2))
    snap = snapshot(new, [N1], old_allocs(old, 3), versions=[old])
    updates = desired_updates(snap, run(snap))["g"]
    assert (updates.canary, updates.place, updates.destructive_update, updates.ignore) == (2, 0, 0, 3)


def test_a_group_scaled_to_zero_starts_no_deployment() -> None:
    old, new = web(0, 2, update()), web(1, 0, update())
    result = run(snapshot(new, [N1], old_allocs(old, 2), versions=[old]))
    assert result.plan.deployment is None and len(stopped(result)) == 2


def test_unhealthy_allocation_without_reschedule_attempts_left_is_kept() -> None:
    from app.structs import ReschedulePolicy

    none_left = ReschedulePolicy(0, 0, 5 * SECOND, "constant", 0, False)
    j = job(groups=[group(count=1, update=update(), reschedule=none_left)], create_index=7)
    d = deployment(j)
    bad = alloc(j, N1, 0, deployment_id=d.id, healthy=False, desired_transition={"Reschedule": True})
    result = run(with_deployment(snapshot(j, [N1], [bad]), d))
    assert placed(result) == [] and stopped(result) == {}
