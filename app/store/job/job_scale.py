"""Job scaling (Nomad's Job.Scale and Job.ScaleStatus): a new count for one task group, checked
against the group's scaling bounds, written as a new job version with its job-scaling
evaluation and a scaling event, all in one transaction."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.jobspec.rules.validate import MAX_GROUP_COUNT
from app.models import Allocation, Deployment, Job, JobScalingEvent
from app.models.scaling import TRACKED_SCALING_EVENTS
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.job.job_reads import get_job
from app.store.job.job_rows import TRACKED_VERSIONS, new_version
from app.structs import launches_children
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES, DEPLOYMENT_ACTIVE_STATUSES
from app.values.errors import InvalidInput
from app.wire.job import JobSpec, TaskGroupSpec
from app.wire.json import JsonObject


@dataclass(frozen=True)
class ScaleRequest:
    group: str
    count: int | None
    message: str = ""
    error: bool = False
    meta: JsonObject | None = None
    max_versions: int = TRACKED_VERSIONS


@dataclass(frozen=True)
class ScaleResult:
    eval_id: uuid.UUID | None
    eval_create_index: int
    job_modify_index: int
    index: int


def scale_job(session: Session, namespace: str, job_id: str, request: ScaleRequest) -> ScaleResult:
    """Record a scaling event; with a Count, also the job's next version and its job-scaling
    evaluation. An event with Error (and no Count) changes nothing but the event history."""
    index = next_index(session, ["jobs", "evaluations"])
    job = get_job(session, namespace, job_id, for_update=True)
    group = _group(job, request.group)
    previous = int(group.get("Count", 0))
    eval_id: uuid.UUID | None = None
    eval_index = 0
    version: int | None = None
    if request.count is not None:
        _check_count(job, group, request.count)
        _check_no_active_deployment(session, job)
        if request.count != previous:
            new_version(session, job, _with_count(job.spec, request.group, request.count), index, request.max_versions)
            version = job.version
        job.modify_index = index
        if not launches_children(job.spec):
            evaluation = insert_eval(
                session,
                EvalRequest(
                    namespace=namespace,
                    job_id=job_id,
                    job_type=job.type,
                    priority=job.priority,
                    triggered_by="job-scaling",
                    job_modify_index=job.job_modify_index,
                ),
                index,
            )
            eval_id, eval_index = evaluation.id, index
    _record_event(session, job, request, previous, eval_id, version, index)
    return ScaleResult(eval_id, eval_index, job.job_modify_index, index)


def _group(job: Job, name: str) -> TaskGroupSpec:
    for group in job.spec.get("TaskGroups") or []:
        if group.get("Name") == name:
            return group
    raise InvalidInput.of("Target.Group", f"job {job.id!r} has no task group {name!r}")


def _check_count(job: Job, group: TaskGroupSpec, count: int) -> None:
    if job.stop:
        raise InvalidInput.of("JobID", f"job {job.id!r} is stopped; register it again before scaling it")
    if count < 0:
        raise InvalidInput.of("Count", f"must not be negative, got {count}")
    if count > MAX_GROUP_COUNT:
        raise InvalidInput.of("Count", f"must be at most {MAX_GROUP_COUNT} (Nomad's job_max_count), got {count}")
    scaling = group.get("Scaling") or {}
    low, high = scaling.get("Min"), scaling.get("Max")
    if low is not None and count < low:
        raise InvalidInput.of("Count", f"group {group['Name']!r}: {count} is below the scaling minimum {low}")
    if high is not None and count > high:
        raise InvalidInput.of("Count", f"group {group['Name']!r}: {count} is above the scaling maximum {high}")


def _check_no_active_deployment(session: Session, job: Job) -> None:
    """Nomad refuses to scale while the job's latest deployment is active (400)."""
    active = session.scalar(
        select(Deployment.id)
        .where(
            Deployment.namespace == job.namespace,
            Deployment.job_id == job.id,
            Deployment.job_create_index == job.create_index,
            Deployment.status.in_(DEPLOYMENT_ACTIVE_STATUSES),
        )
        .limit(1)
    )
    if active is not None:
        raise InvalidInput.of("JobID", f"job scaling blocked due to active deployment {active}")


def _with_count(spec: JobSpec, group_name: str, count: int) -> JobSpec:
    spec = copy.deepcopy(spec)
    for group in spec["TaskGroups"]:
        if group["Name"] == group_name:
            group["Count"] = count
    return spec


def _record_event(
    session: Session,
    job: Job,
    request: ScaleRequest,
    previous: int,
    eval_id: uuid.UUID | None,
    version: int | None,
    index: int,
) -> None:
    session.add(
        JobScalingEvent(
            namespace=job.namespace,
            job_id=job.id,
            task_group=request.group,
            count=request.count,
            previous_count=previous if request.count is not None else None,
            message=request.message,
            error=request.error,
            meta=request.meta,
            eval_id=eval_id,
            job_version=version,
            recorded_at=datetime.now(UTC),
            create_index=index,
        )
    )
    session.flush()
    keep = (
        select(JobScalingEvent.id)
        .where(
            JobScalingEvent.namespace == job.namespace,
            JobScalingEvent.job_id == job.id,
            JobScalingEvent.task_group == request.group,
        )
        .order_by(JobScalingEvent.id.desc())
        .limit(TRACKED_SCALING_EVENTS)
    )
    session.execute(
        delete(JobScalingEvent).where(
            JobScalingEvent.namespace == job.namespace,
            JobScalingEvent.job_id == job.id,
            JobScalingEvent.task_group == request.group,
            JobScalingEvent.id.not_in(keep.scalar_subquery()),
        )
    )


@dataclass(frozen=True)
class GroupScale:
    desired: int
    placed: int
    running: int
    healthy: int
    unhealthy: int
    events: list[JobScalingEvent]


def scale_status(session: Session, namespace: str, job_id: str) -> tuple[Job, dict[str, GroupScale]]:
    """Per task group: the desired count, placed/healthy/unhealthy (from the job's latest
    deployment when it tracks the group, else from the live allocations of the current job),
    running allocations, and the scaling events, newest first."""
    job = get_job(session, namespace, job_id)
    deployment = session.scalars(
        select(Deployment)
        .where(Deployment.namespace == namespace, Deployment.job_id == job_id)
        .order_by(Deployment.create_index.desc())
        .limit(1)
    ).first()
    allocs = session.scalars(
        select(Allocation).where(
            Allocation.namespace == namespace,
            Allocation.job_id == job_id,
            Allocation.create_index >= job.create_index,
            Allocation.desired_status == "run",
            Allocation.client_status.not_in(ALLOC_CLIENT_TERMINAL_STATUSES),
        )
    ).all()
    events = session.scalars(
        select(JobScalingEvent)
        .where(JobScalingEvent.namespace == namespace, JobScalingEvent.job_id == job_id)
        .order_by(JobScalingEvent.id.desc())
    ).all()
    result: dict[str, GroupScale] = {}
    for group in job.spec.get("TaskGroups") or []:
        name = group["Name"]
        mine = [a for a in allocs if a.task_group == name]
        health = [(a.deployment_status or {}).get("Healthy") for a in mine]
        placed, healthy, unhealthy = len(mine), health.count(True), health.count(False)
        state = (deployment.task_groups or {}).get(name) if deployment is not None else None
        if state:
            placed = int(state.get("PlacedAllocs", 0))
            healthy = int(state.get("HealthyAllocs", 0))
            unhealthy = int(state.get("UnhealthyAllocs", 0))
        result[name] = GroupScale(
            desired=int(group.get("Count", 0)),
            placed=placed,
            running=sum(1 for a in mine if a.client_status == "running"),
            healthy=healthy,
            unhealthy=unhealthy,
            events=[e for e in events if e.task_group == name],
        )
    return job, result
