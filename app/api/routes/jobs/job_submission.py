"""GET /v1/job/:id/submission?version=N: the source a job version was submitted as (Nomad's
JobSubmission), kept by app/store/job/job_submissions.py."""

from __future__ import annotations

from typing import TypedDict

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.http.context import read, respond
from app.api.http.params import integer_arg, namespace
from app.store.job import job_reads as reads
from app.store.job.job_submissions import get_submission
from app.values.errors import InvalidInput, NotFound

bp = Blueprint("job_submission", __name__)


class JobSubmissionJson(TypedDict):
    Source: str
    Format: str
    VariableFlags: dict[str, str] | None
    Variables: str
    Namespace: str
    JobID: str
    Version: int
    JobModifyIndex: int


@bp.get("/job/<path:job_id>/submission")
def submission(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    version = integer_arg("version")
    if version is None:
        raise InvalidInput.of("version", "is required: the job version whose source to show")

    def fetch(session: Session) -> JobSubmissionJson:
        reads.get_job(session, ns, job_id)  # 404 naming the job when there is none
        row = get_submission(session, ns, job_id, version)
        if row is None:
            raise NotFound.of("version", f"job source not found for version {version} of job {job_id!r}")
        return {
            "Source": row.source,
            "Format": row.format,
            "VariableFlags": dict(row.variable_flags) or None,
            "Variables": row.variables,
            "Namespace": row.namespace,
            "JobID": row.job_id,
            "Version": row.version,
            "JobModifyIndex": row.job_modify_index,
        }

    body, index = read(["jobs"], fetch)
    return respond(body, index)
