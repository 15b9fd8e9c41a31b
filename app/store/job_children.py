"""The children of periodic and parameterized jobs: launching one (its version 0 and its
evaluation) and deriving its specification from the parent's."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.orm import Session

from app.models import Evaluation, Job
from app.store.job_rows import TRACKED_VERSIONS, job_evaluation, upsert_job
from app.store.jobs import SERVER_FIELDS


def launch_child(session: Session, spec: dict[str, Any], trigger: str, index: int) -> tuple[Job, Evaluation]:
    """A launched child (periodic or dispatched) that does not exist yet, with its version 0
    and its evaluation, in the caller's transaction. The caller holds a key-share lock on the
    parent."""
    child = upsert_job(session, None, spec, index, TRACKED_VERSIONS)
    evaluation = job_evaluation(session, child, trigger, index)
    session.flush()
    return child, evaluation


def derive_child(parent: Job, child_id: str, **fields: Any) -> dict[str, Any]:
    """The specification of a child of `parent`: the parent's, named `child_id` (ID and Name,
    as Nomad derives them), with ParentID set and `fields` on top."""
    spec = {k: v for k, v in copy.deepcopy(parent.spec).items() if k not in SERVER_FIELDS}
    spec.update(ID=child_id, Name=child_id, ParentID=parent.id, **fields)
    return spec
