"""Reads behind /v1/jobs/statuses: the allocations, latest deployments and children's statuses
of a page of jobs, a query each (not one per job)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from app.models import Allocation, Deployment, Job

Key = tuple[str, str]


def allocations_by_job(session: Session, keys: Sequence[Key]) -> dict[Key, list[Allocation]]:
    """Every allocation of each job, whichever incarnation made it (Nomad's AllocsByJob with
    anyCreateIndex), oldest first."""
    found: dict[Key, list[Allocation]] = defaultdict(list)
    if keys:
        rows = session.scalars(
            select(Allocation)
            .where(tuple_(Allocation.namespace, Allocation.job_id).in_(keys))
            .order_by(Allocation.create_index, Allocation.id)
        )
        for row in rows:
            found[(row.namespace, row.job_id)].append(row)
    return found


def latest_deployments(session: Session, keys: Sequence[Key]) -> dict[Key, Deployment]:
    """Each job's deployment with the highest create index."""
    latest: dict[Key, Deployment] = {}
    if keys:
        rows = session.scalars(
            select(Deployment)
            .where(tuple_(Deployment.namespace, Deployment.job_id).in_(keys))
            .order_by(Deployment.create_index, Deployment.id)
        )
        for row in rows:
            latest[(row.namespace, row.job_id)] = row
    return latest


def children(session: Session, keys: Sequence[Key]) -> dict[Key, list[Job]]:
    """The live children of each (periodic or parameterized) parent, in ID order."""
    found: dict[Key, list[Job]] = defaultdict(list)
    if keys:
        rows = session.scalars(
            select(Job)
            .where(tuple_(Job.namespace, Job.parent_id).in_(keys), Job.purged_at.is_(None))
            .order_by(Job.namespace, Job.id)
        )
        for row in rows:
            assert row.parent_id is not None
            found[(row.namespace, row.parent_id)].append(row)
    return found
