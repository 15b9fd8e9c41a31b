"""Periodic launches: one scheduled launch (the leader's tick in app/leader/periodic_launch.py
calls it) and the forced launch. Each launch commits the child job `<parent>/periodic-<unix
time>`, its `periodic-job` evaluation and the parent's launch record together. The record only
moves forward (a conditional upsert that waits on the row lock), so the same time is never
launched twice, even by two leaders at once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Job
from app.store.job.job_children import derive_child, launch_child
from app.store.job.jobs import periodic_active
from app.store.sql import query
from app.values.errors import Conflict, InvalidInput, NotFound

log = structlog.get_logger(__name__)
LAUNCH_TABLES = ["jobs", "evaluations"]


@dataclass(frozen=True)
class Launch:
    """One launch: the child and its evaluation, or neither when it was skipped."""

    parent_id: str
    launch_time: datetime
    child_id: str | None
    eval_id: uuid.UUID | None
    index: int


def child_id(parent_id: str, launch_time: datetime) -> str:
    return f"{parent_id}/periodic-{int(launch_time.timestamp())}"


def force_launch(session: Session, namespace: str, job_id: str, now: datetime | None = None) -> Launch:
    """POST /v1/job/:id/periodic/force: launch now, whatever the schedule and prohibit_overlap
    say (as Nomad's Periodic.Force)."""
    index = next_index(session, LAUNCH_TABLES)
    at = (now or datetime.now(UTC)).replace(microsecond=0)
    result = launch(session, namespace, job_id, at, index, forced=True)
    assert result is not None and result.child_id is not None  # a forced launch raises instead
    return result


def launch(session: Session, namespace: str, job_id: str, at: datetime, index: int, *, forced: bool) -> Launch | None:
    """Launch `job_id` for time `at`; None when there is nothing to launch (gone, disabled, or
    launched already), a Launch without a child when prohibit_overlap skipped it."""
    # Key-share the parent: job GC locks it FOR UPDATE SKIP LOCKED before deleting, so it is
    # either ours for the transaction or already gone (then there is nothing to launch).
    parent = session.get(Job, (namespace, job_id), with_for_update={"key_share": True}, populate_existing=True)
    if parent is None or parent.purged_at is not None:
        if forced:
            raise NotFound.of("JobID", f"job {job_id!r} not found in namespace {namespace!r}")
        return None
    if not periodic_active(parent):
        if forced:
            raise InvalidInput.of("JobID", _not_launchable(parent))
        return None
    params: dict[str, object] = {"namespace": namespace, "job_id": job_id, "launch_time": at, "index": index}
    claimed = session.execute(query("record_forced_launch" if forced else "claim_periodic_launch"), params).first()
    if claimed is None:
        return None  # another leader launched this time (or a later one) first
    if not forced and (parent.spec.get("Periodic") or {}).get("ProhibitOverlap") and _running_children(session, parent):
        session.execute(query("mark_launch_skipped"), params)
        log.info("periodic launch skipped: a child still runs (prohibit_overlap)", job=job_id, at=at.isoformat())
        return Launch(job_id, at, None, None, index)
    name = child_id(job_id, at)
    if session.get(Job, (namespace, name)) is not None:
        if forced:
            raise Conflict.of("JobID", f"job {name!r} already exists: a launch at this second was made; try again")
        return None
    child, evaluation = launch_child(session, derive_child(parent, name, {"Periodic": None}), "periodic-job", index)
    return Launch(job_id, at, child.id, evaluation.id, index)


def _running_children(session: Session, parent: Job) -> bool:
    params = {"namespace": parent.namespace, "job_id": parent.id}
    return bool(session.execute(query("periodic_running_children"), params).scalar_one())


def _not_launchable(job: Job) -> str:
    if job.spec.get("Periodic") is None:
        return f"job {job.id!r} is not periodic"
    if job.stop:
        return f"job {job.id!r} is stopped"
    return f"job {job.id!r} has its periodic launches disabled (Periodic.Enabled is false)"
