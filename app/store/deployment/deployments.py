"""Deployment rows: promoted, paused and failed by operators and by the leader's watcher (plans
create and advance them in the applier's batch: app.pipeline.plan_apply.plan_deployments). Every status
change that needs the scheduler creates its `deployment-watcher` evaluation in the same
transaction; a failure with auto_revert registers the latest stable version again."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Job, JobVersion
from app.models import Deployment as DeploymentRow
from app.scheduler.deployments import RUNNING
from app.store.deployment.deployment_codec import DEPLOYMENT_COLUMNS, deployment_from_mapping, group_from_json
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.job.jobs import RegisterOptions, register_at
from app.store.sql import query
from app.structs import Deployment
from app.values.constants import DEPLOYMENT_ACTIVE_STATUSES
from app.values.errors import Conflict, CorralError, InvalidInput, NotFound
from app.wire.allocation import AllocDeploymentStatusJson

TABLES = ["deployments", "evaluations", "jobs", "allocations"]
PAUSED = "Deployment is paused"
MARKED_FAILED = "Deployment marked as failed"


@dataclass(frozen=True)
class Change:
    """What a deployment operation wrote (Nomad's DeploymentUpdateResponse)."""

    index: int
    deployment_modify_index: int
    eval_id: uuid.UUID | None = None
    eval_create_index: int = 0
    reverted_job_version: int | None = None


def from_row(row: DeploymentRow) -> Deployment:
    return deployment_from_mapping({c: getattr(row, c) for c in DEPLOYMENT_COLUMNS})


def get_row(session: Session, deployment_id: uuid.UUID, *, for_update: bool = False) -> DeploymentRow:
    # Always read afresh: a row already in the session may be older than what the lock protects.
    row = session.get(DeploymentRow, deployment_id, with_for_update=for_update, populate_existing=True)
    if row is None:
        raise NotFound.of("DeploymentID", f"deployment {deployment_id} not found")
    return row


def set_status(session: Session, row: DeploymentRow, status: str, description: str, index: int) -> None:
    """A successful deployment marks its job version stable (the version auto-revert returns to)."""
    row.status, row.status_description = status, description
    row.modify_index, row.modify_time = index, datetime.now(UTC)
    if status != "successful":
        return
    session.execute(
        update(JobVersion)
        .where(
            JobVersion.namespace == row.namespace,
            JobVersion.job_id == row.job_id,
            JobVersion.version == row.job_version,
        )
        .values(stable=True)
    )
    session.execute(
        update(Job)
        .where(Job.namespace == row.namespace, Job.id == row.job_id, Job.version == row.job_version)
        .values(stable=True, modify_index=index)
    )


# --- operator and watcher operations -------------------------------------------------------


def promote(session: Session, deployment_id: uuid.UUID, groups: list[str] | None) -> Change:
    """Promote the canaries of `groups` (None: every group that has canaries). Refused unless
    the deployment is running and each group's canaries are all placed and healthy."""
    index = next_index(session, TABLES)
    row = _active(session, deployment_id, "promote")
    if row.status != "running":
        raise Conflict.of("DeploymentID", f"deployment {deployment_id} is {row.status}; only a running one promotes")
    stored = dict(row.task_groups or {})
    canarying = [n for n, g in stored.items() if g.get("DesiredCanaries", 0) > 0 and not g.get("Promoted")]
    chosen = canarying if groups is None else groups
    if not chosen:
        raise InvalidInput.of("Groups", "the deployment has no canaries to promote")
    healthy = _healthy_canaries(session, row.id)
    for name in chosen:
        group = stored.get(name)
        if group is None:
            raise InvalidInput.of("Groups", f"task group {name!r} is not part of deployment {deployment_id}")
        desired = int(group.get("DesiredCanaries", 0))
        if desired == 0:
            raise InvalidInput.of("Groups", f"task group {name!r} has no canaries to promote")
        if healthy.get(name, 0) < desired:
            raise Conflict.of(
                "Groups", f"task group {name!r} has {healthy.get(name, 0)}/{desired} healthy canaries; promote refused"
            )
        stored[name] = {**group, "Promoted": True}
    row.task_groups = stored
    set_status(session, row, "running", RUNNING, index)
    return _with_eval(session, row, index)


def set_paused(session: Session, deployment_id: uuid.UUID, paused: bool) -> Change:
    index = next_index(session, TABLES)
    row = _active(session, deployment_id, "pause" if paused else "resume")
    if paused:
        set_status(session, row, "paused", PAUSED, index)
        return Change(index, index)
    set_status(session, row, "running", RUNNING, index)
    return _with_eval(session, row, index)


def set_alloc_health(
    session: Session, deployment_id: uuid.UUID, healthy: list[uuid.UUID], unhealthy: list[uuid.UUID]
) -> Change:
    """An operator's verdict on allocations of a running deployment; the watcher then acts on it
    like on a client's (the next batch, or failure). Every allocation must be in the deployment."""
    index = next_index(session, TABLES)
    row = _active(session, deployment_id, "set allocation health in")
    if row.status != "running":
        raise Conflict.of("DeploymentID", f"deployment {deployment_id} is {row.status}; only a running one")
    wanted = {a: True for a in healthy} | {a: False for a in unhealthy}
    allocs = {
        a.id: a
        for a in session.scalars(
            select(Allocation).where(Allocation.id.in_(sorted(wanted))).order_by(Allocation.id).with_for_update()
        )
    }
    now = datetime.now(UTC)
    for alloc_id, verdict in wanted.items():
        alloc = allocs.get(alloc_id)
        if alloc is None or alloc.deployment_id != deployment_id:
            field = "HealthyAllocationIDs" if verdict else "UnhealthyAllocationIDs"
            raise InvalidInput.of(field, f"allocation {alloc_id} is not part of deployment {deployment_id}")
        status: AllocDeploymentStatusJson = {**(alloc.deployment_status or {})}
        status["Healthy"], status["Timestamp"], status["ModifyIndex"] = verdict, now.isoformat(), index
        alloc.deployment_status = status
        alloc.modify_index, alloc.modify_time = index, now
    return _with_eval(session, row, index)


def fail(
    session: Session, deployment_id: uuid.UUID, options: RegisterOptions, description: str = MARKED_FAILED
) -> Change:
    """Fail the deployment; with auto_revert in any group, the latest stable version of the
    job (other than the one being deployed) is registered again, with `options`."""
    index = next_index(session, TABLES)
    row = _active(session, deployment_id, "fail")
    return fail_locked(session, row, description, index, options)


def fail_locked(session: Session, row: DeploymentRow, description: str, index: int, options: RegisterOptions) -> Change:
    """Fail a locked deployment. With auto_revert, only a deployment of the job's current,
    running version reverts (a newer version or a stop must not be undone), and only to the
    newest stable version other than the failed one, when its specification differs (else it
    would loop). A revert the registration checks refuse leaves the deployment failed, saying so."""
    groups = [group_from_json(g) for g in (row.task_groups or {}).values()]
    revert: JobVersion | None = None
    if any(g.auto_revert for g in groups):
        revert, description = _revert_target(session, row, description)
    if revert is not None:
        try:
            with session.begin_nested():
                result = register_at(session, revert.spec.copy(), options, index)
        except CorralError as err:
            description = f"{description.split(' - ')[0]} - auto revert to job version {revert.version} failed: {err}"
        else:
            set_status(session, row, "failed", description, index)
            return Change(index, index, result.eval_id, result.eval_create_index, revert.version)
    set_status(session, row, "failed", description, index)
    return _with_eval(session, row, index)


def _revert_target(session: Session, row: DeploymentRow, description: str) -> tuple[JobVersion | None, str]:
    job = session.get(Job, (row.namespace, row.job_id), with_for_update=True)
    current = (
        job is not None
        and job.purged_at is None
        and not job.stop
        and job.version == row.job_version
        and job.create_index == row.job_create_index
    )
    if job is None or not current:
        return None, description
    stable = session.scalars(
        select(JobVersion)
        .where(
            JobVersion.namespace == row.namespace,
            JobVersion.job_id == row.job_id,
            JobVersion.stable.is_(True),
            JobVersion.version != row.job_version,
        )
        .order_by(JobVersion.version.desc())
        .limit(1)
    ).first()
    if stable is None:
        return None, f"{description} - no stable job version to auto revert to"
    if not _differs(stable.spec, job.spec):
        return None, (
            f"{description} - not rolling back to stable job version {stable.version} "
            "as current job has same specification"
        )
    return stable, f"{description} - rolling back to job version {stable.version}"


def _differs(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    ignored = ("Version", "JobModifyIndex", "ModifyIndex", "CreateIndex", "SubmitTime", "Stable", "Status")
    return {k: v for k, v in a.items() if k not in ignored} != {k: v for k, v in b.items() if k not in ignored}


def _active(session: Session, deployment_id: uuid.UUID, verb: str) -> DeploymentRow:
    row = get_row(session, deployment_id, for_update=True)
    if row.status not in DEPLOYMENT_ACTIVE_STATUSES:
        raise Conflict.of("DeploymentID", f"cannot {verb} deployment {deployment_id}: it is {row.status}")
    return row


def _with_eval(session: Session, row: DeploymentRow, index: int) -> Change:
    evaluation = watcher_eval(session, row, index)
    if evaluation is None:
        return Change(index, index)
    return Change(index, index, evaluation, index)


def watcher_eval(session: Session, row: DeploymentRow, index: int) -> uuid.UUID | None:
    """A `deployment-watcher` evaluation for the deployment's job, or None if the job is gone."""
    job = session.get(Job, (row.namespace, row.job_id), with_for_update={"key_share": True})
    if job is None or job.purged_at is not None:
        return None
    evaluation = insert_eval(
        session,
        EvalRequest(
            namespace=row.namespace,
            job_id=row.job_id,
            job_type=job.type,
            priority=row.eval_priority,
            triggered_by="deployment-watcher",
            job_modify_index=job.job_modify_index,
            deployment_id=row.id,
        ),
        index,
    )
    return evaluation.id


# --- reads -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupCounts:
    placed: int = 0
    healthy: int = 0
    unhealthy: int = 0
    canaries: tuple[uuid.UUID, ...] = ()


def group_counts(session: Session, ids: list[uuid.UUID]) -> dict[tuple[uuid.UUID, str], GroupCounts]:
    """Per deployment and group: allocations placed, healthy and unhealthy, and the canaries."""
    if not ids:
        return {}
    rows = session.execute(query("deployment_group_counts"), {"ids": ids}).mappings()
    return {
        (r["deployment_id"], r["task_group"]): GroupCounts(
            int(r["placed"]), int(r["healthy"]), int(r["unhealthy"]), tuple(r["canaries"] or ())
        )
        for r in rows
    }


def _healthy_canaries(session: Session, deployment_id: uuid.UUID) -> dict[str, int]:
    rows = session.execute(query("deployment_healthy_canaries"), {"id": deployment_id})
    return {str(group): int(n) for group, n in rows}
