"""Deployment reads for the API: lists (by namespace and ID prefix, or by job), the latest
deployment of a job, and a deployment's allocations. Writes live in app.store.deployment.deployments."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from app.models import Allocation, Deployment, Job


def list_deployments(
    session: Session, namespace: str | None, prefix: str | None, *, ascending: bool = False
) -> Sequence[Deployment]:
    """Every deployment of `namespace` (None: all namespaces) whose ID starts with `prefix`,
    newest first (by create index) unless `ascending`."""
    stmt = select(Deployment)
    if namespace is not None:
        stmt = stmt.where(Deployment.namespace == namespace)
    if prefix:
        stmt = stmt.where(cast(Deployment.id, Text).startswith(prefix.lower()))
    order = (Deployment.create_index, Deployment.id)
    stmt = stmt.order_by(*order) if ascending else stmt.order_by(*(c.desc() for c in order))
    return session.scalars(stmt).all()


def job_deployments(session: Session, namespace: str, job_id: str, *, include_all: bool) -> Sequence[Deployment]:
    """The job's deployments, newest first. Without `include_all`, as in Nomad, those of an
    earlier job with the same ID (another JobCreateIndex) are left out while the job exists."""
    stmt = (
        select(Deployment)
        .where(Deployment.namespace == namespace, Deployment.job_id == job_id)
        .order_by(Deployment.create_index.desc(), Deployment.id.desc())
    )
    rows = session.scalars(stmt).all()
    job = session.get(Job, (namespace, job_id))
    if include_all or job is None:
        return rows
    return [d for d in rows if d.job_create_index == job.create_index]


def latest_deployment(session: Session, namespace: str, job_id: str) -> Deployment | None:
    """The job's deployment with the highest create index, whatever its status."""
    stmt = (
        select(Deployment)
        .where(Deployment.namespace == namespace, Deployment.job_id == job_id)
        .order_by(Deployment.create_index.desc(), Deployment.id.desc())
        .limit(1)
    )
    return session.scalars(stmt).first()


def deployment_allocations(session: Session, deployment_id: uuid.UUID) -> Sequence[Allocation]:
    stmt = (
        select(Allocation)
        .where(Allocation.deployment_id == deployment_id)
        .order_by(Allocation.create_index, Allocation.id)
    )
    return session.scalars(stmt).all()
