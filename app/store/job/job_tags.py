"""Version tags (Nomad 1.9's Job.TagVersion): a name and description on one kept version of a
job, unique per job. A tagged version is never pruned (app/store/job/job_rows.py), and
`?diff_tag=NAME` on the versions route compares against it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import JobVersion
from app.store.job.job_reads import get_job
from app.values.errors import Conflict, InvalidInput, NotFound
from app.wire.job import JobVersionTagSpec


@dataclass(frozen=True)
class TagResult:
    tag: JobVersionTagSpec
    index: int


def apply_tag(
    session: Session, namespace: str, job_id: str, name: str, version: int | None, description: str
) -> TagResult:
    """Tag `version` (None: the job's current one) with `name`; re-tagging the same version
    replaces the description, naming another version is a conflict."""
    index = next_index(session, ["jobs"])
    job = get_job(session, namespace, job_id, for_update=True)
    target = job.version if version is None else version
    rows = _versions(session, namespace, job_id)
    for row in rows:
        if (row.version_tag or {}).get("Name") == name and row.version != target:
            raise Conflict.of("name", f"tag {name!r} already exists on version {row.version} of job {job_id!r}")
    found = next((row for row in rows if row.version == target), None)
    if found is None:
        raise NotFound.of("Version", f"job {job_id!r} version {target} not found")
    tag: JobVersionTagSpec = {"Name": name, "Description": description, "TaggedTime": time.time_ns()}
    found.version_tag = tag
    return TagResult(tag, index)


def unset_tag(session: Session, namespace: str, job_id: str, name: str) -> int:
    index = next_index(session, ["jobs"])
    get_job(session, namespace, job_id, for_update=True)
    found = next((r for r in _versions(session, namespace, job_id) if (r.version_tag or {}).get("Name") == name), None)
    if found is None:
        raise NotFound.of("name", f"tag {name!r} not found on job {job_id!r}")
    found.version_tag = None
    return index


def _versions(session: Session, namespace: str, job_id: str) -> list[JobVersion]:
    return list(
        session.scalars(select(JobVersion).where(JobVersion.namespace == namespace, JobVersion.job_id == job_id))
    )


def check_tag_name(name: str) -> None:
    if not name.strip():
        raise InvalidInput.of("name", "a version tag needs a name")
