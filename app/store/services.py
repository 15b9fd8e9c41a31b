"""Nomad's service catalog (service_registrations): the clients' upserts, the reads behind
/v1/services, /v1/service/<name>, a job's and an allocation's services, and the operator's
delete. Terminal allocations and down nodes lose theirs by trigger (migration 0023)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import ServiceRegistration
from app.store.client_allocs import authenticate
from app.store.sql import query
from app.values.errors import NotFound

TABLE = "service_registrations"


class RegistrationJson(TypedDict):
    """Nomad's ServiceRegistration as the API serves it."""

    ID: str
    ServiceName: str
    Namespace: str
    NodeID: str
    Datacenter: str
    JobID: str
    AllocID: str
    Tags: list[str]
    Address: str
    Port: int
    CreateIndex: int
    ModifyIndex: int


@dataclass(frozen=True)
class Offered:
    """One registration a client offers for one of its allocations."""

    id: str
    service_name: str
    alloc_id: uuid.UUID
    tags: tuple[str, ...]
    address: str
    port: int


@dataclass(frozen=True)
class SyncResult:
    index: int  # 0 when nothing changed
    upserted: int
    removed: int


def encode(row: ServiceRegistration) -> RegistrationJson:
    return {
        "ID": row.id,
        "ServiceName": row.service_name,
        "Namespace": row.namespace,
        "NodeID": str(row.node_id),
        "Datacenter": row.datacenter,
        "JobID": row.job_id,
        "AllocID": str(row.alloc_id),
        "Tags": list(row.tags),
        "Address": row.address,
        "Port": row.port,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def sync(
    session: Session, node_id: uuid.UUID, secret: str, allocs: Mapping[uuid.UUID, Sequence[Offered]]
) -> SyncResult:
    """Make each listed allocation's registrations exactly what the client offers (none: its
    services are deregistered). Upsert by ID, so a client that registers again after a
    restart changes nothing. Offers for allocations that are not this node's, or that are
    terminal, are dropped (the client's next round no longer offers them)."""
    authenticate(session, node_id, secret)
    offered = [reg for regs in allocs.values() for reg in regs]
    removed = session.execute(
        query("services_drop_stale"),
        {"node_id": node_id, "alloc_ids": list(allocs), "keep_ids": [reg.id for reg in offered]},
    ).all()
    upserted = session.execute(
        query("services_upsert"), {"node_id": node_id, "regs": json.dumps([_row(reg) for reg in offered])}
    ).all()
    index = next_index(session, [TABLE]) if removed or upserted else 0
    return SyncResult(index, len(upserted), len(removed))


def _row(reg: Offered) -> dict[str, object]:
    return {
        "id": reg.id,
        "service_name": reg.service_name,
        "alloc_id": str(reg.alloc_id),
        "tags": list(reg.tags),
        "address": reg.address,
        "port": reg.port,
    }


def listed(session: Session, namespace: str | None) -> list[ServiceRegistration]:
    """Every registration of the namespace (None: all), by namespace, name and ID."""
    statement = select(ServiceRegistration)
    if namespace is not None:
        statement = statement.where(ServiceRegistration.namespace == namespace)
    order = (ServiceRegistration.namespace, ServiceRegistration.service_name, ServiceRegistration.id)
    return list(session.scalars(statement.order_by(*order)))


def by_name(session: Session, namespace: str, name: str) -> list[ServiceRegistration]:
    statement = select(ServiceRegistration).where(
        ServiceRegistration.namespace == namespace, ServiceRegistration.service_name == name
    )
    return list(session.scalars(statement.order_by(ServiceRegistration.id)))


def by_job(session: Session, namespace: str, job_id: str) -> list[ServiceRegistration]:
    statement = select(ServiceRegistration).where(
        ServiceRegistration.namespace == namespace, ServiceRegistration.job_id == job_id
    )
    return list(session.scalars(statement.order_by(ServiceRegistration.service_name, ServiceRegistration.id)))


def by_alloc(session: Session, alloc_id: uuid.UUID) -> list[ServiceRegistration]:
    statement = select(ServiceRegistration).where(ServiceRegistration.alloc_id == alloc_id)
    return list(session.scalars(statement.order_by(ServiceRegistration.service_name, ServiceRegistration.id)))


def delete_by_id(session: Session, namespace: str, registration_id: str) -> int:
    """Nomad's ServiceRegistration.DeleteByID (an operator's cleanup): by namespace and ID, as
    Nomad's, whatever the name in the path; NotFound names the ID."""
    gone = session.execute(
        delete(ServiceRegistration)
        .where(ServiceRegistration.id == registration_id, ServiceRegistration.namespace == namespace)
        .returning(ServiceRegistration.id)
    ).all()
    if not gone:
        raise NotFound.of("ID", f"service registration {registration_id!r} not found")
    return next_index(session, [TABLE])
