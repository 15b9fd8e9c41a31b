"""Job writes (register, stop, purge) and reads. Each write commits with its evaluation."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, exists, func, literal_column, select
from sqlalchemy.orm import Session

from app.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.jobspec.canonical import canonical_job
from app.models import Allocation, Evaluation, Job, JobVersion, Namespace, NodePool, SchedulerConfig
from app.store.evals import EvalRequest, insert_eval
from app.store.sql import query
from app.structs import launches_children

# Nomad's JobDefaultTrackedVersions; the servers pass CORRAL_JOB_MAX_VERSIONS.
TRACKED_VERSIONS = 6

# Fields the servers own. A client that sends back what it read must not change them,
# and they never count as a change of the specification.
SERVER_FIELDS = (
    "Status",
    "StatusDescription",
    "Stable",
    "Version",
    "SubmitTime",
    "CreateIndex",
    "ModifyIndex",
    "JobModifyIndex",
)


@dataclass(frozen=True)
class RegisterOptions:
    enforce_index: bool = False
    job_modify_index: int = 0
    eval_priority: int | None = None
    preserve_counts: bool = False
    max_versions: int = TRACKED_VERSIONS


@dataclass(frozen=True)
class WriteResult:
    eval_id: uuid.UUID | None
    eval_create_index: int
    job_modify_index: int
    index: int


def register_job(session: Session, spec: dict[str, Any], options: RegisterOptions) -> WriteResult:
    """Write a (normalized) job and its job-register evaluation in one transaction."""
    index = next_index(session, ["jobs", "evaluations"])
    return register_at(session, spec, options, index)


def register_at(session: Session, spec: dict[str, Any], options: RegisterOptions, index: int) -> WriteResult:
    """register_job within a transaction that has already taken its state index (for `jobs`
    and `evaluations`): a revert checks the locked job first, then registers the old spec."""
    spec = {k: v for k, v in spec.items() if k not in SERVER_FIELDS}
    namespace, job_id = spec["Namespace"], spec["ID"]
    _check_registration_allowed(session)
    check_references(session, spec)
    lock_object(session, ObjectKind.JOB, f"{namespace}/{job_id}")  # a first registration has no row to lock
    existing = session.get(Job, (namespace, job_id), with_for_update=True)
    live = existing if existing is not None and existing.purged_at is None else None
    _check_enforce_index(live, options)
    _check_parent(session, spec, live)
    if live is not None and options.preserve_counts:
        spec = _preserve_counts(spec, live.spec)
    job = _upsert_job(session, existing, spec, index, options.max_versions)
    if launches_children(job.spec):
        # A periodic or parameterized parent places nothing, so it needs no evaluation, unless
        # it ran something before it became one: then the evaluation stops that.
        if periodic_active(job):
            _init_periodic_launch(session, job, index)
        if not _has_live_allocations(session, job):
            return WriteResult(None, 0, job.job_modify_index, index)
    evaluation = insert_eval(
        session,
        EvalRequest(
            namespace=namespace,
            job_id=job_id,
            job_type=job.type,
            priority=options.eval_priority or job.priority,
            triggered_by="job-register",
            job_modify_index=job.job_modify_index,
        ),
        index,
    )
    return WriteResult(evaluation.id, index, job.job_modify_index, index)


def periodic_active(job: Job) -> bool:
    """Nomad's IsPeriodicActive: a periodic block that is enabled, on a job not stopped."""
    periodic = job.spec.get("Periodic")
    return isinstance(periodic, dict) and bool(periodic.get("Enabled", True)) and not job.stop and job.purged_at is None


def _init_periodic_launch(session: Session, job: Job, index: int) -> None:
    params = {"namespace": job.namespace, "job_id": job.id, "launch_time": job.submit_time, "index": index}
    session.execute(query("init_periodic_launch"), params)


def launch_child(session: Session, spec: dict[str, Any], trigger: str, index: int) -> tuple[Job, Evaluation]:
    """A launched child (periodic or dispatched) that does not exist yet, with its version 0
    and its evaluation, in the caller's transaction. The caller holds a key-share lock on the
    parent."""
    child = _upsert_job(session, None, spec, index, TRACKED_VERSIONS)
    evaluation = insert_eval(
        session,
        EvalRequest(
            namespace=child.namespace,
            job_id=child.id,
            job_type=child.type,
            priority=child.priority,
            triggered_by=trigger,
            job_modify_index=child.job_modify_index,
        ),
        index,
    )
    session.flush()
    return child, evaluation


def derive_child(parent: Job, child_id: str, **fields: Any) -> dict[str, Any]:
    """The specification of a child of `parent`: the parent's, named `child_id` (ID and Name,
    as Nomad derives them), with ParentID set and `fields` on top."""
    spec = {k: v for k, v in copy.deepcopy(parent.spec).items() if k not in SERVER_FIELDS}
    spec.update(ID=child_id, Name=child_id, ParentID=parent.id, **fields)
    return spec


def _check_registration_allowed(session: Session) -> None:
    config = session.get(SchedulerConfig, 1)
    if config is not None and config.reject_job_registration:
        raise Forbidden.of(
            "Job",
            "job registration is disabled by the scheduler configuration (RejectJobRegistration)",
        )


def check_references(session: Session, spec: dict[str, Any]) -> None:
    if session.get(Namespace, spec["Namespace"]) is None:
        raise InvalidInput.of("Job.Namespace", f"namespace {spec['Namespace']!r} does not exist")
    if session.get(NodePool, spec["NodePool"]) is None:
        raise InvalidInput.of("Job.NodePool", f"node pool {spec['NodePool']!r} does not exist")


def _check_parent(session: Session, spec: dict[str, Any], live: Job | None) -> None:
    """A child names an existing parent (jobs.parent_id is a foreign key). The parent is
    key-share locked: job GC locks a parent FOR UPDATE SKIP LOCKED before it re-checks for
    children, so it either skips this parent or has deleted it before we look (then 400)."""
    parent_id = spec.get("ParentID") or None
    if parent_id is None or (live is not None and live.parent_id == parent_id):
        return  # unchanged: the foreign key already keeps that parent
    if parent_id == spec["ID"]:
        raise InvalidInput.of("Job.ParentID", "a job cannot be its own parent")
    parent = session.execute(
        select(Job.purged_at)
        .where(Job.namespace == spec["Namespace"], Job.id == parent_id)
        .with_for_update(key_share=True)
    ).first()
    if parent is None or parent.purged_at is not None:
        raise InvalidInput.of(
            "Job.ParentID", f"parent job {parent_id!r} does not exist in namespace {spec['Namespace']!r}"
        )


def _check_enforce_index(live: Job | None, options: RegisterOptions) -> None:
    if not options.enforce_index:
        return
    if options.job_modify_index == 0 and live is not None:
        raise Conflict.of(
            "JobModifyIndex",
            f"job already exists with job modify index {live.job_modify_index}; 0 means it must not exist",
        )
    if options.job_modify_index != 0:
        if live is None:
            raise Conflict.of("JobModifyIndex", f"job does not exist but index {options.job_modify_index} was enforced")
        if live.job_modify_index != options.job_modify_index:
            raise Conflict.of(
                "JobModifyIndex",
                f"job exists with conflicting job modify index {live.job_modify_index}, not {options.job_modify_index}",
            )


def _preserve_counts(spec: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    counts = {g["Name"]: g.get("Count") for g in current.get("TaskGroups", [])}
    spec = copy.deepcopy(spec)
    for group in spec.get("TaskGroups", []):
        if group["Name"] in counts:
            group["Count"] = counts[group["Name"]]
    return spec


def _upsert_job(session: Session, existing: Job | None, spec: dict[str, Any], index: int, max_versions: int) -> Job:
    now = datetime.now(UTC)
    if existing is None:
        job = Job(namespace=spec["Namespace"], id=spec["ID"], create_index=index, created_at=now)
        session.add(job)
        _apply_spec(job, spec, version=0, index=index, now=now)
        job.status, job.status_updated_at = "pending", now
    elif existing.purged_at is not None:
        # A purged job still owns its old allocations until GC; re-registering revives the
        # row. Version numbers continue so the old versions those allocations run stay valid.
        job = existing
        job.purged_at = None
        _apply_spec(job, spec, version=job.version + 1, index=index, now=now)
        job.create_index, job.status, job.status_updated_at = index, "pending", now
    else:
        job = existing
        # Compared as Nomad sends them: a job read back and registered again (its zero
        # values spelt out) is the same job, as in Nomad.
        if canonical_job(job.spec) == canonical_job(spec):
            job.modify_index = index
            return job
        _apply_spec(job, spec, version=job.version + 1, index=index, now=now)
        if job.status == "dead":
            job.status, job.status_updated_at = "pending", now
    session.flush()
    _insert_version(session, job, now, max_versions)
    return job


def new_version(session: Session, job: Job, spec: dict[str, Any], index: int, max_versions: int) -> None:
    """Make `spec` the locked job's next version (a scale changes only a count)."""
    now = datetime.now(UTC)
    _apply_spec(job, spec, version=job.version + 1, index=index, now=now)
    if job.status == "dead":
        job.status, job.status_updated_at = "pending", now
    session.flush()
    _insert_version(session, job, now, max_versions)


def _apply_spec(job: Job, spec: dict[str, Any], *, version: int, index: int, now: datetime) -> None:
    job.spec = spec
    job.name = spec.get("Name") or spec["ID"]
    job.type = spec["Type"]
    job.priority = spec["Priority"]
    job.stop = bool(spec.get("Stop", False))
    job.version = version
    job.job_modify_index = index
    job.modify_index = index
    job.submit_time = now
    job.updated_at = now
    job.datacenters = list(spec.get("Datacenters") or [])
    job.node_pool = spec["NodePool"]
    job.parent_id = spec.get("ParentID") or None
    job.periodic = spec.get("Periodic") is not None
    job.parameterized = spec.get("ParameterizedJob") is not None
    job.dispatched = bool(spec.get("Dispatched", False))
    job.all_at_once = bool(spec.get("AllAtOnce", False))
    job.stable = False


def _insert_version(session: Session, job: Job, now: datetime, max_versions: int) -> None:
    session.add(
        JobVersion(
            namespace=job.namespace,
            job_id=job.id,
            version=job.version,
            spec=job.spec,
            job_modify_index=job.job_modify_index,
            stable=False,
            submit_time=now,
        )
    )
    session.flush()
    _prune_versions(session, job, max_versions)


def _prune_versions(session: Session, job: Job, max_versions: int) -> None:
    """Keep the newest `max_versions`; older ones go unless tagged or still run by an allocation."""
    keep = (
        select(JobVersion.version)
        .where(JobVersion.namespace == job.namespace, JobVersion.job_id == job.id)
        .order_by(JobVersion.version.desc())
        .limit(max_versions)
    )
    in_use = exists().where(
        Allocation.namespace == JobVersion.namespace,
        Allocation.job_id == JobVersion.job_id,
        Allocation.job_version == JobVersion.version,
    )
    session.execute(
        delete(JobVersion).where(
            JobVersion.namespace == job.namespace,
            JobVersion.job_id == job.id,
            JobVersion.version.not_in(keep.scalar_subquery()),
            JobVersion.version_tag.is_(None),
            ~in_use,
        )
    )


def deregister_job(
    session: Session,
    namespace: str,
    job_id: str,
    *,
    purge: bool,
    eval_priority: int | None,
    max_versions: int = TRACKED_VERSIONS,
) -> WriteResult:
    """Stop a job (a new version with Stop=true) and, with purge, hide it until GC; one
    job-deregister evaluation commits with it."""
    index = next_index(session, ["jobs", "evaluations"])
    job = get_job(session, namespace, job_id, for_update=True)
    now = datetime.now(UTC)
    if not job.stop:
        _apply_spec(job, {**job.spec, "Stop": True}, version=job.version + 1, index=index, now=now)
        session.flush()
        _insert_version(session, job, now, max_versions)
    job.modify_index = index
    if purge:
        job.purged_at = now
    live = _has_live_allocations(session, job)
    if not live:
        job.status, job.status_updated_at = "dead", now
    if launches_children(job.spec) and not live:
        return WriteResult(None, 0, job.job_modify_index, index)
    evaluation = insert_eval(
        session,
        EvalRequest(
            namespace=namespace,
            job_id=job_id,
            job_type=job.type,
            priority=eval_priority or job.priority,
            triggered_by="job-deregister",
            job_modify_index=job.job_modify_index,
        ),
        index,
    )
    return WriteResult(evaluation.id, index, job.job_modify_index, index)


def _has_live_allocations(session: Session, job: Job) -> bool:
    return bool(
        session.scalar(
            select(
                exists().where(
                    Allocation.namespace == job.namespace,
                    Allocation.job_id == job.id,
                    Allocation.desired_status == "run",
                    Allocation.client_status.not_in(ALLOC_CLIENT_TERMINAL_STATUSES),
                )
            )
        )
    )


def get_job(session: Session, namespace: str, job_id: str, *, for_update: bool = False) -> Job:
    job = session.get(Job, (namespace, job_id), with_for_update=for_update or None)
    if job is None or job.purged_at is not None:
        raise NotFound.of("JobID", f"job {job_id!r} not found in namespace {namespace!r}")
    return job


def list_jobs(session: Session, namespace: str | None, prefix: str | None) -> Sequence[Job]:
    stmt = select(Job).where(Job.purged_at.is_(None))
    if namespace is not None:
        stmt = stmt.where(Job.namespace == namespace)
    if prefix:
        stmt = stmt.where(Job.id.startswith(prefix, autoescape=True))
    return session.scalars(stmt.order_by(Job.namespace, Job.id)).all()


def job_versions(session: Session, job: Job) -> Sequence[JobVersion]:
    return session.scalars(
        select(JobVersion)
        .where(JobVersion.namespace == job.namespace, JobVersion.job_id == job.id)
        .order_by(JobVersion.version.desc())
    ).all()


def job_allocations(session: Session, job: Job) -> Sequence[Allocation]:
    return session.scalars(
        select(Allocation)
        .where(Allocation.namespace == job.namespace, Allocation.job_id == job.id)
        .order_by(Allocation.create_index)
    ).all()


def derived_status(session: Session, job: Job) -> str:
    """Nomad's job status, derived from the job's allocations and evaluations."""
    return str(session.execute(query("job_status"), {"namespace": job.namespace, "job_id": job.id}).scalar_one())


def derived_statuses(session: Session, namespace: str | None) -> dict[tuple[str, str], str]:
    rows = session.execute(query("job_statuses"), {"namespace": namespace})
    return {(str(ns), str(job_id)): str(status) for ns, job_id, status in rows}


def children_summaries(session: Session, namespace: str | None) -> dict[tuple[str, str], dict[str, int]]:
    """(namespace, parent job) -> counts of its periodic or dispatched children by status."""
    derived = func.corral_job_status_v1(literal_column("jobs"))
    stmt = select(Job.namespace, Job.parent_id, derived, func.count()).where(
        Job.parent_id.is_not(None), Job.purged_at.is_(None)
    )
    if namespace is not None:
        stmt = stmt.where(Job.namespace == namespace)
    result: dict[tuple[str, str], dict[str, int]] = {}
    for ns, parent, status, n in session.execute(stmt.group_by(Job.namespace, Job.parent_id, derived)):
        counts = result.setdefault((ns, str(parent)), {"Pending": 0, "Running": 0, "Dead": 0})
        counts[str(status).capitalize()] = int(n)
    return result


def children_summary(session: Session, job: Job) -> dict[str, int]:
    found = children_summaries(session, job.namespace).get((job.namespace, job.id))
    return found or {"Pending": 0, "Running": 0, "Dead": 0}


SUMMARY_COLUMNS = ("Queued", "Complete", "Failed", "Running", "Starting", "Lost", "Unknown")


def task_group_summaries(
    session: Session, namespace: str | None, job_id: str | None = None
) -> dict[tuple[str, str], dict[str, dict[str, int]]]:
    """(namespace, job) -> task group -> Nomad summary counts."""
    result: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    rows = session.execute(query("task_group_summaries"), {"namespace": namespace, "job_id": job_id})
    for ns, jid, group, *counts in rows:
        result.setdefault((ns, jid), {})[group] = dict(zip(SUMMARY_COLUMNS, map(int, counts), strict=True))
    return result
