"""Job version operations (Nomad's Job.Revert and Job.Stable). A revert registers an old
version's specification again, as a new version with its job-register evaluation."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Job, JobVersion
from app.store.job.job_reads import get_job
from app.store.job.jobs import RegisterOptions, WriteResult, register_at
from app.values.errors import Conflict, InvalidInput, NotFound


def revert_job(
    session: Session,
    namespace: str,
    job_id: str,
    version: int,
    enforce_prior_version: int | None,
    options: RegisterOptions,
) -> WriteResult:
    index = next_index(session, ["jobs", "evaluations"])
    job = get_job(session, namespace, job_id, for_update=True)
    if enforce_prior_version is not None and enforce_prior_version != job.version:
        raise Conflict.of(
            "EnforcePriorVersion",
            f"current job has version {job.version}; enforcing version {enforce_prior_version}",
        )
    if version == job.version:
        raise InvalidInput.of("JobVersion", f"cannot revert to the current version ({version})")
    old = _version(session, job, version)
    return register_at(session, old.spec, options, index)


def set_stable(session: Session, namespace: str, job_id: str, version: int, stable: bool) -> int:
    """Mark one version stable (or not); the job's own flag follows when it is the current one."""
    index = next_index(session, ["jobs"])
    job = get_job(session, namespace, job_id, for_update=True)
    row = _version(session, job, version)
    row.stable = stable
    if version == job.version:
        job.stable = stable
    job.modify_index = index
    return index


def _version(session: Session, job: Job, version: int) -> JobVersion:
    row = session.get(JobVersion, (job.namespace, job.id, version), with_for_update=True)
    if row is None:
        raise NotFound.of("JobVersion", f"job {job.id!r} has no version {version} (pruned or never written)")
    return row
