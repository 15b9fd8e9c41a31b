"""Nomad's service catalog: registrations of provider-nomad services (migration 0023)."""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, Integer, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class ServiceRegistration(Base):
    __tablename__ = "service_registrations"
    __table_args__ = (
        Index("ix_service_registrations_namespace_service_name", "namespace", "service_name"),
        Index("ix_service_registrations_namespace_job_id", "namespace", "job_id"),
        Index("ix_service_registrations_alloc_id", "alloc_id"),
        Index("ix_service_registrations_node_id", "node_id"),
        {
            "comment": "Nomad's service catalog: the registrations of running allocations' provider-nomad "
            "services, written by their clients and deleted when the allocation turns terminal or its node "
            "goes down."
        },
    )

    id: Mapped[str] = mapped_column(
        primary_key=True,
        comment="Nomad's registration ID: _nomad-task-<alloc>-<group-<name>|task>-<service>-<port label>.",
    )
    service_name: Mapped[str] = mapped_column(comment="The service's name (ServiceName).")
    namespace: Mapped[str] = mapped_column(comment="Namespace of the job that registered it.")
    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), comment="Node running the allocation."
    )
    datacenter: Mapped[str] = mapped_column(comment="Datacenter of that node.")
    job_id: Mapped[str] = mapped_column(comment="Job of the allocation.")
    alloc_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("allocations.id", ondelete="CASCADE"), comment="Allocation the service runs in."
    )
    tags: Mapped[list[str]] = mapped_column(
        server_default=text("'{}'::text[]"), comment="The service's tags, interpolated by the client."
    )
    address: Mapped[str] = mapped_column(comment="Address the service listens on (host mode).")
    port: Mapped[int] = mapped_column(Integer, comment="Port the service listens on; 0 when it names none.")
    create_index: Mapped[int] = mapped_column(comment="State index of the first registration.")
    modify_index: Mapped[int] = mapped_column(comment="State index of the latest upsert.")
