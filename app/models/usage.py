"""Per-node totals of live allocations, kept by triggers on allocations."""

from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, ForeignKey, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class NodeUsage(Base):
    __tablename__ = "node_usage"
    __table_args__ = {
        "comment": "Resources held by live allocations (desired run, client not terminal) per node. "
        "Maintained by statement triggers on allocations, which also refuse any change that would "
        "push a node past its allocatable capacity (invariant 1, enforced by the database)."
    }

    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True, comment="The node."
    )
    cpu: Mapped[int] = mapped_column(BigInteger, comment="CPU MHz held by live allocations.")
    memory_mb: Mapped[int] = mapped_column(BigInteger, comment="Memory MB held by live allocations.")
    disk_mb: Mapped[int] = mapped_column(BigInteger, comment="Disk MB held by live allocations.")
    live_allocs: Mapped[int] = mapped_column(BigInteger, comment="Number of live allocations.")
    modify_index: Mapped[int] = mapped_column(
        BigInteger,
        server_default=text("0"),
        comment="State index of the transaction that last changed this row (set by the node_usage_stamp "
        "trigger); 0 for rows unchanged since this column was added. Workers read only rows above the "
        "safe index of their previous snapshot.",
    )


class NodeUnblock(Base):
    __tablename__ = "node_unblocks"
    __table_args__ = {
        "comment": "Last state index at which capacity appeared on each node; a system blocked eval "
        "whose snapshot predates it for a node it waits on was unblocked meanwhile (missed-unblock check)."
    }

    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True, comment="The node."
    )
    unblock_index: Mapped[int] = mapped_column(comment="State index of the latest capacity change.")


class ClassUnblock(Base):
    __tablename__ = "class_unblocks"
    __table_args__ = {
        "comment": "Last state index at which capacity appeared for each computed node class; a "
        "blocked eval whose snapshot predates it was unblocked meanwhile (Nomad's missed-unblock check)."
    }

    computed_class: Mapped[str] = mapped_column(primary_key=True, comment="Computed node class.")
    unblock_index: Mapped[int] = mapped_column(comment="State index of the latest capacity change.")
