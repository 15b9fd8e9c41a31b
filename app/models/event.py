"""The event stream's outbox (sql/functions/events_v1.sql fills it from row triggers)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Identity, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base
from app.wire.json import JsonObject


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_event_index", "event_index"),
        {
            "comment": "Outbox of the event stream: one row per change of a job, evaluation, allocation, "
            "deployment or node that took a state index, written by triggers in the change's transaction."
        },
    )

    id: Mapped[int] = mapped_column(
        BigInteger,
        Identity(always=True),
        primary_key=True,
        comment="Insertion order: orders the events of one index, and the GC walks it oldest first.",
    )
    event_index: Mapped[int] = mapped_column(comment="State index of the change (its Index).")
    topic: Mapped[str] = mapped_column(comment="Nomad's Topic: Job, Evaluation, Allocation, Deployment or Node.")
    type: Mapped[str] = mapped_column(comment="Nomad's event Type (JobRegistered, PlanResult, NodeDrain, ...).")
    key: Mapped[str] = mapped_column(comment="ID of the object (Key).")
    namespace: Mapped[str] = mapped_column(comment="Namespace of the object; '' for nodes (not namespaced).")
    filter_keys: Mapped[list[str] | None] = mapped_column(
        comment="Nomad's FilterKeys: related IDs a topic key may also match (job, deployment)."
    )
    snapshot: Mapped[JsonObject] = mapped_column(
        JSONB, comment="The row as written (to_jsonb), rendered into Nomad's Payload when read."
    )
    created_at: Mapped[datetime] = mapped_column(
        server_default=text("now()"),
        comment="When the change was written; events older than the retention are deleted.",
    )
