"""Sticky host volume claims (Nomad 1.10's TaskGroupHostVolumeClaim): the dynamic host volume a
task group's `sticky = true` volume block was placed with, which the group's later placements
must use again."""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column


class HostVolumeClaim(Base):
    __tablename__ = "host_volume_claims"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        UniqueConstraint("namespace", "job_id", "task_group", "volume_id"),
        Index("ix_host_volume_claims_volume_id", "volume_id"),
        {
            "comment": "Sticky host volume claims (Nomad's TaskGroupHostVolumeClaim): one per job, group and "
            "volume; a group with claims is placed only where a claimed volume is."
        },
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Nomad's claim ID, made by the applier.")
    namespace: Mapped[str] = mapped_column(comment="The claiming job's namespace.")
    job_id: Mapped[str] = mapped_column(comment="The claiming job.")
    task_group: Mapped[str] = mapped_column(comment="The claiming task group (TaskGroupName).")
    alloc_id: Mapped[uuid.UUID] = mapped_column(
        comment="The allocation placed with the volume most recently; no foreign key: the claim outlives the "
        "allocation's garbage collection, as Nomad's does."
    )
    volume_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("host_volumes.id", ondelete="CASCADE"), comment="The claimed dynamic host volume."
    )
    volume_name: Mapped[str] = mapped_column(comment="The volume's name (the group's source).")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
