"""Job reads: one job, lists, its versions and allocations, and the statuses and summaries
derived from its allocations, evaluations and children."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import exists, func, literal_column, select
from sqlalchemy.orm import Session

from app.models import Allocation, Job, JobVersion
from app.store.sql import query
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import NotFound
from app.wire.job import JobChildrenSummaryJson, JobType, MultiregionSpec, TaskGroupSummaryJson


class JobListed(NamedTuple):
    """A job as lists show it: its stub's columns and the two keys of its specification a
    JobListStub shows, read without the rest (ORM rows carrying every job's whole specification,
    read and decoded, were most of a big job list's time)."""

    namespace: str
    id: str
    name: str
    type: JobType
    priority: int
    status: str
    status_description: str
    stop: bool
    job_modify_index: int
    submit_time: datetime
    datacenters: list[str]
    node_pool: str
    parent_id: str | None
    periodic: bool
    parameterized: bool
    create_index: int
    modify_index: int
    multiregion: MultiregionSpec | None
    meta: dict[str, str] | None


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


def list_job_stubs(session: Session, namespace: str | None, prefix: str | None) -> list[JobListed]:
    """list_jobs as a list shows them (JobListed), in the same order."""
    rows = session.execute(query("job_stubs"), {"namespace": namespace, "prefix": prefix or None})
    return [JobListed(*row) for row in rows]


def job_types(session: Session, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The type of each (namespace, job ID) in one statement: a list names hundreds of jobs."""
    wanted = set(keys)
    if not wanted:
        return {}
    namespaces, ids = zip(*wanted, strict=True)
    rows = session.execute(query("job_types"), {"namespaces": list(namespaces), "ids": list(ids)})
    return {(str(ns), str(job_id)): str(kind) for ns, job_id, kind in rows}


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


def has_live_allocations(session: Session, job: Job) -> bool:
    """Whether any allocation of the job is still meant to run and has not finished."""
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


def derived_status(session: Session, job: Job) -> str:
    """Nomad's job status, derived from the job's allocations and evaluations."""
    return str(session.execute(query("job_status"), {"namespace": job.namespace, "job_id": job.id}).scalar_one())


def derived_statuses(session: Session, namespace: str | None) -> dict[tuple[str, str], str]:
    rows = session.execute(query("job_statuses"), {"namespace": namespace})
    return {(str(ns), str(job_id)): str(status) for ns, job_id, status in rows}


def no_children() -> JobChildrenSummaryJson:
    return {"Pending": 0, "Running": 0, "Dead": 0}


def children_summaries(session: Session, namespace: str | None) -> dict[tuple[str, str], JobChildrenSummaryJson]:
    """(namespace, parent job) -> counts of its periodic or dispatched children by status."""
    derived = func.corral_job_status_v1(literal_column("jobs"))
    stmt = select(Job.namespace, Job.parent_id, derived, func.count()).where(
        Job.parent_id.is_not(None), Job.purged_at.is_(None)
    )
    if namespace is not None:
        stmt = stmt.where(Job.namespace == namespace)
    result: dict[tuple[str, str], JobChildrenSummaryJson] = {}
    for ns, parent, status, n in session.execute(stmt.group_by(Job.namespace, Job.parent_id, derived)):
        counts = result.setdefault((ns, str(parent)), no_children())
        match status:
            case "pending":
                counts["Pending"] = int(n)
            case "running":
                counts["Running"] = int(n)
            case _:
                counts["Dead"] = int(n)
    return result


def children_summary(session: Session, job: Job) -> JobChildrenSummaryJson:
    found = children_summaries(session, job.namespace).get((job.namespace, job.id))
    return found or no_children()


def task_group_summaries(
    session: Session, namespace: str | None, job_id: str | None = None
) -> dict[tuple[str, str], dict[str, TaskGroupSummaryJson]]:
    """(namespace, job) -> task group -> Nomad summary counts. One job's (both keys given) is read
    by its key: the list's statement would count every job's allocations to keep its one."""
    result: dict[tuple[str, str], dict[str, TaskGroupSummaryJson]] = {}
    one = namespace is not None and job_id is not None
    statement = query("job_task_group_summaries" if one else "task_group_summaries")
    rows = session.execute(statement, {"namespace": namespace, "job_id": job_id})
    for ns, jid, group, queued, complete, failed, running, starting, lost, unknown in rows:
        result.setdefault((ns, jid), {})[group] = {
            "Queued": int(queued),
            "Complete": int(complete),
            "Failed": int(failed),
            "Running": int(running),
            "Starting": int(starting),
            "Lost": int(lost),
            "Unknown": int(unknown),
        }
    return result
