"""A client's deployment health verdict from task states: healthy after min_healthy_time of
uninterrupted running, unhealthy on a failed task or at the healthy deadline, manual never."""

from __future__ import annotations

from typing import Any

import pytest

from client.service_health.health import NANOS, HealthWatch
from client.tasks.task_state import rfc3339

pytestmark = pytest.mark.unit
T0 = 1_000.0


def alloc(health_check: str = "task_states", deployment: str | None = "d1") -> dict[str, Any]:
    update = {"MinHealthyTime": 10 * NANOS, "HealthyDeadline": 60 * NANOS, "HealthCheck": health_check}
    return {
        "DeploymentID": deployment,
        "TaskGroup": "g",
        "Job": {"TaskGroups": [{"Name": "g", "Update": update}]},
    }


def running(since: float, restarted: float | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"State": "running", "Failed": False, "StartedAt": rfc3339(int(since * NANOS))}
    if restarted is not None:
        state["LastRestart"] = rfc3339(int(restarted * NANOS))
    return state


def test_no_deployment_no_watch() -> None:
    assert HealthWatch.of(alloc(deployment=None), T0) is None


def test_healthy_after_min_healthy_time_of_running() -> None:
    watch = HealthWatch.of(alloc(), T0)
    assert watch is not None
    assert not watch.judge("running", [running(T0)], T0 + 9)
    assert watch.judge("running", [running(T0)], T0 + 10)
    report = watch.report()
    assert report is not None and report["Healthy"] is True and report["DeploymentID"] == "d1"
    assert not watch.judge("failed", [running(T0)], T0 + 20)  # a verdict is final
    assert watch.healthy is True


def test_a_restart_starts_the_clock_again() -> None:
    watch = HealthWatch.of(alloc(), T0)
    assert watch is not None
    assert not watch.judge("running", [running(T0, restarted=T0 + 8)], T0 + 12)
    assert watch.judge("running", [running(T0, restarted=T0 + 8)], T0 + 18)


def test_failed_task_is_unhealthy_at_once() -> None:
    watch = HealthWatch.of(alloc(), T0)
    assert watch is not None
    failed = {"State": "dead", "Failed": True, "StartedAt": rfc3339(int(T0 * NANOS))}
    assert watch.judge("failed", [failed], T0 + 1)
    assert watch.healthy is False


def test_unhealthy_when_the_deadline_passes_first() -> None:
    watch = HealthWatch.of(alloc(), T0)
    assert watch is not None
    pending = {"State": "pending", "Failed": False}
    assert not watch.judge("pending", [pending], T0 + 59)
    assert watch.judge("pending", [pending], T0 + 60)
    assert watch.healthy is False


def test_manual_health_is_never_decided_by_the_client() -> None:
    watch = HealthWatch.of(alloc("manual"), T0)
    assert watch is not None
    assert not watch.judge("running", [running(T0)], T0 + 1000)
    assert watch.report() is None


def test_a_restarted_client_keeps_the_clock_and_the_verdict() -> None:
    watch = HealthWatch.of(alloc(), T0)
    assert watch is not None
    restored = HealthWatch.restore(watch.saved())
    assert restored == watch and restored is not None and restored.started == T0
    assert restored.judge("running", [running(T0)], T0 + 10)
    again = HealthWatch.restore(restored.saved())
    assert again is not None and again.healthy is True and again.report() == restored.report()
    assert HealthWatch.restore(None) is None and HealthWatch.restore({"unknown": 1}) is None


def migrating(job_type: str, migrate: dict[str, Any] | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"Name": "g", "Update": {"MinHealthyTime": 1 * NANOS}}
    if migrate is not None:
        group["Migrate"] = migrate
    return {"DeploymentID": None, "TaskGroup": "g", "Job": {"Type": job_type, "TaskGroups": [group]}}


def test_a_service_allocation_outside_a_deployment_is_judged_by_its_migrate_block() -> None:
    """The drainer waits for this verdict (Nomad's client judges migrations the same way)."""
    watch = HealthWatch.of(migrating("service", {"MinHealthyTime": 20 * NANOS, "HealthyDeadline": 90 * NANOS}), T0)
    assert watch is not None and (watch.min_healthy_s, watch.deadline_s) == (20, 90)
    assert not watch.judge("running", [running(T0)], T0 + 19)
    assert watch.judge("running", [running(T0)], T0 + 20)
    report = watch.report()
    assert report is not None and report["DeploymentID"] is None and report["Healthy"] is True
    defaults = HealthWatch.of(migrating("service"), T0)  # migrate's defaults: 10 s, 5 m
    assert defaults is not None and (defaults.min_healthy_s, defaults.deadline_s) == (10, 300)
    assert HealthWatch.of(migrating("batch"), T0) is None
