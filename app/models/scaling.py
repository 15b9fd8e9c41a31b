"""Scaling events: the history of `POST /v1/job/:id/scale` per task group (Nomad's ScalingEvent)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKeyConstraint, Identity, Index, Integer
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column
from app.wire.json import JsonObject

# Nomad's JobTrackedScalingEvents: the newest events kept per task group.
TRACKED_SCALING_EVENTS = 20


class JobScalingEvent(Base):
    __tablename__ = "job_scaling_events"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        Index("ix_job_scaling_events_job_group", "namespace", "job_id", "task_group", "id"),
        {
            "comment": "Scaling events per job and task group (POST /v1/job/:id/scale), newest "
            f"{TRACKED_SCALING_EVENTS} per group kept; they go with their job."
        },
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True, comment="Event number.")
    namespace: Mapped[str] = mapped_column(comment="Namespace of the job.")
    job_id: Mapped[str] = mapped_column(comment="The scaled job.")
    task_group: Mapped[str] = mapped_column(comment="The task group the event is about (Target.Group).")
    count: Mapped[int | None] = mapped_column(
        Integer, comment="Count asked for; NULL for an event that only reports (an Error without a Count)."
    )
    previous_count: Mapped[int | None] = mapped_column(
        Integer, comment="The group's count before the change; NULL when the count did not change."
    )
    message: Mapped[str] = mapped_column(comment="Message the caller gave (e.g. an autoscaler's reason).")
    error: Mapped[bool] = mapped_column(comment="The event reports an error; such an event never changes the job.")
    meta: Mapped[JsonObject | None] = mapped_column(JSONB, comment="Caller's metadata for the event (Meta).")
    eval_id: Mapped[uuid.UUID | None] = mapped_column(
        comment="The job-scaling evaluation created with the change. History, not a foreign key: kept after "
        "evaluation GC collects it."
    )
    job_version: Mapped[int | None] = mapped_column(
        Integer, comment="The job version the change created; NULL when the job did not change."
    )
    recorded_at: Mapped[datetime] = mapped_column(comment="When the event was recorded (Nomad's Time).")
    create_index: Mapped[int] = create_index_column()
