"""A job's row and its versions: every job write (register, stop, scale, a launched child)
ends here, as does the evaluation it commits with."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, exists, select
from sqlalchemy.orm import Session

from app.jobspec.canonical import canonical_job
from app.models import Allocation, Evaluation, Job, JobVersion
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.wire.job import JobSpec

# Nomad's JobDefaultTrackedVersions; the servers pass CORRAL_JOB_MAX_VERSIONS.
TRACKED_VERSIONS = 6


def upsert_job(session: Session, existing: Job | None, spec: JobSpec, index: int, max_versions: int) -> Job:
    """Make `spec` the job's current version: a new job, a purged one revived, or the next
    version of a live one (none when the specification is unchanged)."""
    now = datetime.now(UTC)
    if existing is None:
        job = Job(namespace=spec["Namespace"], id=spec["ID"], create_index=index, created_at=now)
        session.add(job)
        apply_spec(job, spec, version=0, index=index, now=now)
        job.status, job.status_updated_at = "pending", now
    elif existing.purged_at is not None:
        # A purged job still owns its old allocations until GC; re-registering revives the
        # row. Version numbers continue so the old versions those allocations run stay valid.
        job = existing
        job.purged_at = None
        apply_spec(job, spec, version=job.version + 1, index=index, now=now)
        job.create_index, job.status, job.status_updated_at = index, "pending", now
    else:
        job = existing
        # Compared as Nomad sends them: a job read back and registered again (its zero
        # values spelt out) is the same job, as in Nomad.
        if canonical_job(job.spec) == canonical_job(spec):
            job.modify_index = index
            return job
        apply_spec(job, spec, version=job.version + 1, index=index, now=now)
        if job.status == "dead":
            job.status, job.status_updated_at = "pending", now
    session.flush()
    insert_version(session, job, now, max_versions)
    return job


def new_version(session: Session, job: Job, spec: JobSpec, index: int, max_versions: int) -> None:
    """Make `spec` the locked job's next version (a scale changes only a count)."""
    now = datetime.now(UTC)
    apply_spec(job, spec, version=job.version + 1, index=index, now=now)
    if job.status == "dead":
        job.status, job.status_updated_at = "pending", now
    session.flush()
    insert_version(session, job, now, max_versions)


def apply_spec(job: Job, spec: JobSpec, *, version: int, index: int, now: datetime) -> None:
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


def insert_version(session: Session, job: Job, now: datetime, max_versions: int) -> None:
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


def job_evaluation(
    session: Session, job: Job, triggered_by: str, index: int, priority: int | None = None
) -> Evaluation:
    """The evaluation a write of `job` commits with (at the job's priority unless the caller
    names one)."""
    return insert_eval(
        session,
        EvalRequest(
            namespace=job.namespace,
            job_id=job.id,
            job_type=job.type,
            priority=priority or job.priority,
            triggered_by=triggered_by,
            job_modify_index=job.job_modify_index,
        ),
        index,
    )
