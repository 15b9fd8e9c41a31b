"""The children of periodic and parameterized jobs: launching one (its version 0 and its
evaluation) and deriving its specification from the parent's."""

from __future__ import annotations

import copy

from sqlalchemy.orm import Session

from app.models import Evaluation, Job
from app.store.job.job_rows import TRACKED_VERSIONS, job_evaluation, upsert_job
from app.store.job.jobs import without_server_fields
from app.wire.job import JobSpec


def launch_child(session: Session, spec: JobSpec, trigger: str, index: int) -> tuple[Job, Evaluation]:
    """A launched child (periodic or dispatched) that does not exist yet, with its version 0
    and its evaluation, in the caller's transaction. The caller holds a key-share lock on the
    parent."""
    child = upsert_job(session, None, spec, index, TRACKED_VERSIONS)
    evaluation = job_evaluation(session, child, trigger, index)
    session.flush()
    return child, evaluation


def derive_child(parent: Job, child_id: str, fields: JobSpec) -> JobSpec:
    """The specification of a child of `parent`: the parent's, named `child_id` (ID and Name,
    as Nomad derives them), with ParentID set and `fields` on top."""
    spec = without_server_fields(copy.deepcopy(parent.spec))
    spec["ID"] = spec["Name"] = child_id
    spec["ParentID"] = parent.id
    spec.update(fields)
    return spec
