"""Deployments as the generic scheduler sees them (Nomad's reconciler): which deployment is
current, how many destructive updates may go now, when canaries are placed, when a
deployment is created, and when it is complete. Pure: the store counts health, the leader's
watcher fails, promotes and reverts."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from app.structs import Allocation, Deployment, DeploymentGroup, DeploymentStatusUpdate, Job, TaskGroup

CANCELLED_NEWER = "Cancelled due to newer version of job"
CANCELLED_STOPPED = "Cancelled because job is stopped"
RUNNING = "Deployment is running"
NEEDS_PROMOTION = "Deployment is running but requires manual promotion"
PENDING_AUTO_PROMOTION = "Deployment is running pending automatic promotion"
SUCCESSFUL = "Deployment completed successfully"


def rolls_out(group: TaskGroup) -> bool:
    """Nomad's !UpdateStrategy.IsEmpty(): max_parallel 0 turns deployments off for the group."""
    return group.update is not None and group.update.max_parallel > 0


@dataclass
class GroupRollout:
    """One group's deployment decisions in this pass."""

    state: DeploymentGroup
    existing: bool
    canaries: list[Allocation] = field(default_factory=list)

    @property
    def canarying(self) -> bool:
        return self.state.desired_canaries > 0 and not self.state.promoted


class DeploymentTracker:
    """The job's current deployment through one pass: cancelled when outdated, created when a
    group starts rolling out, its group states changed, and marked successful when done."""

    def __init__(
        self, job: Job | None, latest: Deployment | None, now_ns: int, new_id: Callable[[], uuid.UUID]
    ) -> None:
        self.job, self.now_ns, self._new_id = job, now_ns, new_id
        self.updates: list[DeploymentStatusUpdate] = []
        self.current = self._current(job, latest)
        self.created = False
        self.changed = False
        self.groups: dict[str, DeploymentGroup] = dict(self.current.groups) if self.current else {}
        self.incomplete: set[str] = set()

    def _current(self, job: Job | None, latest: Deployment | None) -> Deployment | None:
        if latest is None:
            return None
        if job is None or job.stop:
            self._cancel(latest, CANCELLED_STOPPED)
            return None
        if latest.job_version != job.version or latest.job_create_index != job.create_index:
            self._cancel(latest, CANCELLED_NEWER)
            return None
        if latest.status == "successful":
            return None
        return latest

    def _cancel(self, deployment: Deployment, description: str) -> None:
        if deployment.active:
            self.updates.append(DeploymentStatusUpdate(deployment.id, "cancelled", description))

    @property
    def paused(self) -> bool:
        return self.current is not None and self.current.status == "paused"

    @property
    def failed(self) -> bool:
        return self.current is not None and self.current.status == "failed"

    @property
    def deployment_id(self) -> uuid.UUID | None:
        return self.current.id if self.current else None

    def rollout(self, group: TaskGroup, allocs: Iterable[Allocation]) -> GroupRollout:
        existing = self.groups.get(group.name)
        if existing is not None:
            state = existing
        elif group.update is not None and rolls_out(group):
            state = DeploymentGroup(
                auto_revert=group.update.auto_revert,
                auto_promote=group.update.auto_promote,
                progress_deadline_ns=group.update.progress_deadline_ns,
                desired_total=group.count,
            )
        else:
            state = DeploymentGroup(desired_total=group.count)
        current = self.deployment_id
        canaries = [a for a in allocs if a.canary and not a.terminal and current and a.deployment_id == current]
        return GroupRollout(state, existing is not None, canaries)

    def set_group(self, name: str, state: DeploymentGroup) -> None:
        if self.groups.get(name) != state:
            self.groups[name] = state
            self.changed = True

    def start(self, group: TaskGroup, rollout: GroupRollout, had_running: bool, updating_spec: bool) -> None:
        """Nomad's createDeployment: a group with an update block that places something joins
        the deployment, created on first use, unless the job already ran this version and
        nothing in its spec changed."""
        if rollout.existing or not rolls_out(group) or group.count == 0 or (had_running and not updating_spec):
            return
        assert self.job is not None
        if self.current is None:
            self.current = Deployment(
                id=self._new_id(),
                namespace=self.job.namespace,
                job_id=self.job.id,
                job_version=self.job.version,
                job_create_index=self.job.create_index,
                job_modify_index=self.job.job_modify_index,
                status="running",
                status_description=RUNNING,
                eval_priority=self.job.priority,
            )
            self.created = True
        deadline = rollout.state.progress_deadline_ns
        self.set_group(
            group.name, replace(rollout.state, require_progress_by_ns=self.now_ns + deadline if deadline else 0)
        )

    def plan_parts(self) -> tuple[Deployment | None, tuple[DeploymentStatusUpdate, ...]]:
        """What the plan carries: the deployment (new, or with changed group states) and the
        status updates (cancellations, and success once every group is done)."""
        updates = list(self.updates)
        current = self.current
        if current is None:
            return None, tuple(updates)
        if not self.created and current.status == "running" and not self.incomplete and self.groups:
            updates.append(DeploymentStatusUpdate(current.id, "successful", SUCCESSFUL))
        if not (self.created or self.changed):
            return None, tuple(updates)
        return replace(current, groups=dict(self.groups), status_description=self._description(current)), tuple(updates)

    def _description(self, current: Deployment) -> str:
        if current.status != "running":
            return current.status_description
        waiting = [g for g in self.groups.values() if g.desired_canaries > 0 and not g.promoted]
        if not waiting:
            return current.status_description if not self.created else RUNNING
        return PENDING_AUTO_PROMOTION if all(g.auto_promote for g in waiting) else NEEDS_PROMOTION


def destructive_allowance(
    group: TaskGroup,
    tracker: DeploymentTracker,
    rollout: GroupRollout,
    untainted: Iterable[Allocation],
    pending_changes: int,
) -> int:
    """Nomad's computeUnderProvisionedBy: how many destructive updates may start now."""
    if not rolls_out(group) or pending_changes == 0:
        return group.count
    assert group.update is not None
    if tracker.current is None:
        return group.update.max_parallel
    if tracker.paused or tracker.failed or rollout.canarying:
        return 0
    allowance = group.update.max_parallel
    for alloc in untainted:
        if alloc.deployment_id != tracker.current.id or alloc.terminal:
            continue
        if alloc.healthy is False:
            return 0  # something in this deployment is unhealthy: nothing more until it is resolved
        if alloc.healthy is None:
            allowance -= 1
    return max(allowance, 0)


def healthy_count(allocs: Iterable[Allocation], deployment_id: uuid.UUID) -> int:
    return sum(1 for a in allocs if a.deployment_id == deployment_id and a.healthy and not a.terminal)
