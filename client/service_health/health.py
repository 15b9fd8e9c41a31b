"""Deployment health of one allocation, judged from its task states (`health_check =
"task_states"`) and, with `health_check = "checks"` (the default), from its Nomad service
checks too: healthy once every task has run and every healthiness check has passed for
`min_healthy_time` without interruption, unhealthy when a task fails or `healthy_deadline`
passes first (so a check that never passes fails the deployment). `manual` leaves health to
the operator. Judged once per deployment: a verdict is final, as in Nomad. A service
allocation outside any deployment is judged by its group's `migrate` block instead (Nomad's
client does the same): the drainer waits for that verdict before it moves the next allocation."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from app.wire.api.api_nodes import AllocHealthReportJson
from client.tasks import task_state

NANOS = 1_000_000_000


@dataclass
class HealthWatch:
    deployment_id: str
    min_healthy_s: float
    deadline_s: float
    manual: bool
    started: float
    healthy: bool | None = None
    decided_at: float = 0.0
    use_checks: bool = False  # health_check = "checks": service checks must pass as well

    @classmethod
    def of(cls, alloc: dict[str, Any], now: float | None = None) -> HealthWatch | None:
        """A watch for an allocation in a deployment (by its update block) or for a service
        allocation outside one (by its migrate block); None for any other."""
        deployment_id = alloc.get("DeploymentID")
        if deployment_id:
            update = _update_block(alloc)
        elif (alloc.get("Job") or {}).get("Type") == "service":
            update = _migrate_block(alloc)
        else:
            return None
        return cls(
            deployment_id=str(deployment_id or ""),
            min_healthy_s=float(update.get("MinHealthyTime", 10 * NANOS)) / NANOS,
            deadline_s=float(update.get("HealthyDeadline", 300 * NANOS)) / NANOS,
            manual=update.get("HealthCheck") == "manual",
            started=time.time() if now is None else now,
            use_checks=update.get("HealthCheck", "checks") == "checks",
        )

    def saved(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def restore(cls, saved: dict[str, Any] | None) -> HealthWatch | None:
        if not saved:
            return None
        try:
            return cls(**saved)
        except TypeError:
            return None  # written by another version: judge again

    def judge(
        self, client_status: str, states: list[dict[str, Any]], now: float, checks: tuple[bool, float] | None = None
    ) -> bool:
        """Decide if the time has come; returns whether a verdict was reached just now.
        `checks` is whether every healthiness check passes and since when (None: none to run)."""
        if self.healthy is not None or self.manual:
            return False
        since = self.started
        if self.use_checks and checks is not None:
            passing, passing_since = checks
            since = max(since, passing_since) if passing else float("inf")
        verdict = _verdict(client_status, states, now, self.min_healthy_s, since)
        if verdict is None and now - self.started >= self.deadline_s:
            verdict = False
        if verdict is None:
            return False
        self.healthy, self.decided_at = verdict, now
        return True

    def report(self) -> AllocHealthReportJson | None:
        if self.healthy is None:
            return None
        return {
            "DeploymentID": self.deployment_id or None,
            "Healthy": self.healthy,
            "Timestamp": datetime.fromtimestamp(self.decided_at, UTC).isoformat(),
        }


def _verdict(
    client_status: str, states: list[dict[str, Any]], now: float, min_healthy_s: float, watched_since: float
) -> bool | None:
    if client_status == "failed" or any(s.get("Failed") for s in states):
        return False
    if client_status != "running" or not states or any(s.get("State") != "running" for s in states):
        return None
    # A restart starts the clock again: the task must stay up for min_healthy_time in one go.
    # An allocation that joined a deployment while running (an in-place update) is watched anew.
    since = max(max(task_state.seconds(s.get("StartedAt")), task_state.seconds(s.get("LastRestart"))) for s in states)
    return True if now - max(since, watched_since) >= min_healthy_s else None


def _update_block(alloc: dict[str, Any]) -> dict[str, Any]:
    job = alloc.get("Job") or {}
    return dict(_group(alloc).get("Update") or job.get("Update") or {})


def _migrate_block(alloc: dict[str, Any]) -> dict[str, Any]:
    """The group's migrate block; its defaults (10 s, 5 m) are the ones `of` falls back to."""
    job = alloc.get("Job") or {}
    return dict(_group(alloc).get("Migrate") or job.get("Migrate") or {})


def _group(alloc: dict[str, Any]) -> dict[str, Any]:
    job = alloc.get("Job") or {}
    group = next((g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), None)
    return dict(group or {})
