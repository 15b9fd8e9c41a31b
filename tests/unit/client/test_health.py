"""A client's deployment health verdict from task states: healthy after min_healthy_time of
uninterrupted running, unhealthy on a failed task or at the healthy deadline, manual never."""

from __future__ import annotations

from typing import Any

import pytest

from workers.client.health import NANOS, HealthWatch

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
    state: dict[str, Any] = {"State": "running", "Failed": False, "StartedAt": int(since * NANOS)}
    if restarted is not None:
        state["LastRestart"] = int(restarted * NANOS)
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
    failed = {"State": "dead", "Failed": True, "StartedAt": int(T0 * NANOS)}
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
