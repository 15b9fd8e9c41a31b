"""Sticky host volume claims (Nomad 1.10's TaskGroupHostVolumeClaim): listing and deleting them.
The plan applier writes them (app.pipeline.plan_apply.plan_writes) in the transaction that
commits the placement; purging a job deletes its claims (app.store.job.jobs)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Text, cast, delete, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import HostVolumeClaim
from app.values.errors import NotFound

TABLES = ["host_volume_claims"]


@dataclass(frozen=True)
class ClaimFilter:
    """Nomad's TaskGroupVolumeClaimListRequest: `namespace` None is every namespace (`*`)."""

    namespace: str | None
    job_id: str = ""
    task_group: str = ""
    volume_name: str = ""
    prefix: str = ""


def list_claims(session: Session, wanted: ClaimFilter) -> list[HostVolumeClaim]:
    query = select(HostVolumeClaim).order_by(HostVolumeClaim.namespace, HostVolumeClaim.id)
    if wanted.namespace is not None:
        query = query.where(HostVolumeClaim.namespace == wanted.namespace)
    if wanted.job_id:
        query = query.where(HostVolumeClaim.job_id == wanted.job_id)
    if wanted.task_group:
        query = query.where(HostVolumeClaim.task_group == wanted.task_group)
    if wanted.volume_name:
        query = query.where(HostVolumeClaim.volume_name == wanted.volume_name)
    if wanted.prefix:
        query = query.where(cast(HostVolumeClaim.id, Text).startswith(wanted.prefix, autoescape=True))
    return list(session.scalars(query))


def volume_claims(session: Session, volume_id: uuid.UUID) -> list[HostVolumeClaim]:
    return list(session.scalars(select(HostVolumeClaim).where(HostVolumeClaim.volume_id == volume_id)))


def delete_claim(session: Session, namespace: str, claim_id: uuid.UUID) -> int:
    """Nomad's TaskGroupHostVolumeClaim.Delete: a claim of another namespace does not exist."""
    found = session.get(HostVolumeClaim, claim_id, with_for_update=True)
    if found is None or found.namespace != namespace:
        raise NotFound.of("ClaimID", "task group volume claim does not exist")
    index = next_index(session, TABLES)
    session.delete(found)
    return index


def delete_job_claims(session: Session, namespace: str, job_id: str) -> None:
    """A purged job's claims go with it (Nomad's deleteTaskGroupHostVolumeClaimByNamespaceAndJob)."""
    gone = session.execute(
        delete(HostVolumeClaim)
        .where(HostVolumeClaim.namespace == namespace, HostVolumeClaim.job_id == job_id)
        .returning(HostVolumeClaim.id)
    ).all()
    if gone:
        next_index(session, TABLES)
