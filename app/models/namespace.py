"""Namespaces and node pools: the two containers every job and node belongs to."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, created_at_column, modify_index_column
from app.values.constants import SCHEDULER_ALGORITHMS, sql_in


class Namespace(Base):
    __tablename__ = "namespaces"
    __table_args__ = {"comment": "Namespaces isolate jobs; every job belongs to exactly one."}

    name: Mapped[str] = mapped_column(primary_key=True, comment="Namespace name, e.g. 'default'.")
    description: Mapped[str] = mapped_column(server_default=text("''"), comment="Free text shown to operators.")
    meta: Mapped[dict[str, str]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="User metadata (string map)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    created_at: Mapped[datetime] = created_at_column()


class NodePool(Base):
    __tablename__ = "node_pools"
    __table_args__ = (
        CheckConstraint(
            f"scheduler_algorithm IS NULL OR scheduler_algorithm IN {sql_in(SCHEDULER_ALGORITHMS)}",
            name="scheduler_algorithm",
        ),
        {"comment": "Node pools group nodes; jobs target one pool ('all' means every pool)."},
    )

    name: Mapped[str] = mapped_column(primary_key=True, comment="Pool name; 'default' and 'all' are built in.")
    description: Mapped[str] = mapped_column(server_default=text("''"), comment="Free text shown to operators.")
    meta: Mapped[dict[str, str]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="User metadata (string map)."
    )
    scheduler_algorithm: Mapped[str | None] = mapped_column(
        comment="Overrides the cluster scheduler algorithm for this pool (binpack or spread)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    created_at: Mapped[datetime] = created_at_column()
