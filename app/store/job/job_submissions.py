"""The source of each job version (Nomad's JobSubmission): written with the registration that
made the version, read by /v1/job/:id/submission. Rows go with their version (a foreign key
cascades when the version is pruned or the job purged)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models import Job, JobSubmission


@dataclass(frozen=True)
class Submission:
    source: str
    format: str
    variable_flags: dict[str, str]
    variables: str


def save_submission(session: Session, namespace: str, job_id: str, submission: Submission) -> None:
    """Keep `submission` as the source of the job's current version (replacing what that version
    had: a registration that changed nothing keeps the version and takes the newer source)."""
    job = session.get(Job, (namespace, job_id))
    assert job is not None, "called after the registration that wrote the job"
    values = {
        "source": submission.source,
        "format": submission.format,
        "variable_flags": submission.variable_flags,
        "variables": submission.variables,
        "job_modify_index": job.job_modify_index,
    }
    statement = insert(JobSubmission).values(namespace=namespace, job_id=job_id, version=job.version, **values)
    session.execute(statement.on_conflict_do_update(index_elements=["namespace", "job_id", "version"], set_=values))


def get_submission(session: Session, namespace: str, job_id: str, version: int) -> JobSubmission | None:
    return session.get(JobSubmission, (namespace, job_id, version))
