"""Job writes: register (starting an active periodic job's launch clock) and deregister (stop,
purge). Each commits with its evaluation. Reads are in job_reads, a job's rows and versions in
job_rows, launched children in job_children."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.models import Allocation, Job, Namespace, NodePool, SchedulerConfig
from app.store.host_volume_claims import delete_job_claims
from app.store.job.job_reads import get_job, has_live_allocations
from app.store.job.job_rows import TRACKED_VERSIONS, apply_spec, insert_version, job_evaluation, upsert_job
from app.store.sql import query
from app.structs import launches_children
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import Conflict, Forbidden, InvalidInput
from app.wire.job import JobSpec

# Fields the servers own. A client that sends back what it read must not change them,
# and they never count as a change of the specification.
ServerField = Literal[
    "Status", "StatusDescription", "Stable", "Version", "SubmitTime", "CreateIndex", "ModifyIndex", "JobModifyIndex"
]
SERVER_FIELDS: tuple[ServerField, ...] = get_args(ServerField)


def without_server_fields(spec: JobSpec) -> JobSpec:
    """A copy of `spec` without the fields the servers own."""
    out = spec.copy()
    for key in SERVER_FIELDS:
        out.pop(key, None)
    return out


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


def register_job(session: Session, spec: JobSpec, options: RegisterOptions) -> WriteResult:
    """Write a (normalized) job and its job-register evaluation in one transaction."""
    index = next_index(session, ["jobs", "evaluations"])
    return register_at(session, spec, options, index)


def register_at(session: Session, spec: JobSpec, options: RegisterOptions, index: int) -> WriteResult:
    """register_job within a transaction that has already taken its state index (for `jobs`
    and `evaluations`): a revert checks the locked job first, then registers the old spec."""
    spec = without_server_fields(spec)
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
    job = upsert_job(session, existing, spec, index, options.max_versions)
    if launches_children(job.spec):
        # A periodic or parameterized parent places nothing, so it needs no evaluation, unless
        # it ran something before it became one: then the evaluation stops that.
        if periodic_active(job):
            _init_periodic_launch(session, job, index)
        if not has_live_allocations(session, job):
            return WriteResult(None, 0, job.job_modify_index, index)
    evaluation = job_evaluation(session, job, "job-register", index, options.eval_priority)
    return WriteResult(evaluation.id, index, job.job_modify_index, index)


def periodic_active(job: Job) -> bool:
    """Nomad's IsPeriodicActive: a periodic block that is enabled, on a job not stopped."""
    periodic = job.spec.get("Periodic")
    return isinstance(periodic, dict) and bool(periodic.get("Enabled", True)) and not job.stop and job.purged_at is None


def _init_periodic_launch(session: Session, job: Job, index: int) -> None:
    """Start the periodic job's launch clock at its submit time."""
    params = {"namespace": job.namespace, "job_id": job.id, "launch_time": job.submit_time, "index": index}
    session.execute(query("init_periodic_launch"), params)


def _check_registration_allowed(session: Session) -> None:
    config = session.get(SchedulerConfig, 1)
    if config is not None and config.reject_job_registration:
        raise Forbidden.of(
            "Job",
            "job registration is disabled by the scheduler configuration (RejectJobRegistration)",
        )


def check_references(session: Session, spec: JobSpec) -> None:
    if session.get(Namespace, spec["Namespace"]) is None:
        raise InvalidInput.of("Job.Namespace", f"namespace {spec['Namespace']!r} does not exist")
    if session.get(NodePool, spec["NodePool"]) is None:
        raise InvalidInput.of("Job.NodePool", f"node pool {spec['NodePool']!r} does not exist")


def _check_parent(session: Session, spec: JobSpec, live: Job | None) -> None:
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


def _preserve_counts(spec: JobSpec, current: JobSpec) -> JobSpec:
    counts = {g["Name"]: g["Count"] for g in current.get("TaskGroups", []) if "Count" in g}
    spec = copy.deepcopy(spec)
    for group in spec.get("TaskGroups", []):
        if group["Name"] in counts:
            group["Count"] = counts[group["Name"]]
    return spec


def deregister_job(
    session: Session,
    namespace: str,
    job_id: str,
    *,
    purge: bool,
    eval_priority: int | None,
    max_versions: int = TRACKED_VERSIONS,
    no_shutdown_delay: bool = False,
) -> WriteResult:
    """Stop a job (a new version with Stop=true) and, with purge, hide it until GC; one
    job-deregister evaluation commits with it. `no_shutdown_delay` marks the job's unfinished
    allocations (DesiredTransition.NoShutdownDelay, as Nomad's FSM does) so that their clients
    kill the tasks without waiting out the group's and tasks' shutdown_delay."""
    tables = ["jobs", "evaluations", *(["allocations"] if no_shutdown_delay else [])]
    index = next_index(session, tables)
    if no_shutdown_delay:
        # The allocations before the job: alloc stop locks its allocation, then the job, and the
        # opposite order here could deadlock the two.
        _skip_shutdown_delay(session, namespace, job_id, index)
    job = get_job(session, namespace, job_id, for_update=True)
    now = datetime.now(UTC)
    if not job.stop:
        apply_spec(job, {**job.spec, "Stop": True}, version=job.version + 1, index=index, now=now)
        session.flush()
        insert_version(session, job, now, max_versions)
    job.modify_index = index
    if purge:
        job.purged_at = now
        delete_job_claims(session, namespace, job_id)
    live = has_live_allocations(session, job)
    if not live:
        job.status, job.status_updated_at = "dead", now
    if launches_children(job.spec) and not live:
        return WriteResult(None, 0, job.job_modify_index, index)
    evaluation = job_evaluation(session, job, "job-deregister", index, eval_priority)
    return WriteResult(evaluation.id, index, job.job_modify_index, index)


def _skip_shutdown_delay(session: Session, namespace: str, job_id: str, index: int) -> None:
    """Mark every allocation of the job its client still runs; a new index, so the client sees it."""
    rows = session.scalars(
        select(Allocation)
        .where(
            Allocation.namespace == namespace,
            Allocation.job_id == job_id,
            Allocation.client_status.not_in(ALLOC_CLIENT_TERMINAL_STATUSES),
        )
        .order_by(Allocation.id)  # one lock order for every writer of several allocations
        .with_for_update()
    )
    for alloc in rows:
        alloc.desired_transition = {**(alloc.desired_transition or {}), "NoShutdownDelay": True}
        alloc.modify_index = alloc.alloc_modify_index = index
