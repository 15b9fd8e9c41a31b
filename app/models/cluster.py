"""Cluster-wide singletons: scheduler configuration, leader terms and the state index."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, Integer, SmallInteger, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column, updated_at_column
from app.values.constants import LEADER_ROLES, SCHEDULER_ALGORITHMS, sql_in


class SchedulerConfig(Base):
    __tablename__ = "scheduler_config"
    __table_args__ = (
        CheckConstraint("id = 1", name="single_row"),
        CheckConstraint(f"scheduler_algorithm IN {sql_in(SCHEDULER_ALGORITHMS)}", name="algorithm"),
        {"comment": "The one scheduler configuration row (Nomad's SchedulerConfiguration)."},
    )

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, comment="Always 1.")
    scheduler_algorithm: Mapped[str] = mapped_column(
        server_default=text("'binpack'"), comment="binpack (default) or spread."
    )
    preemption_system: Mapped[bool] = mapped_column(
        server_default=text("true"), comment="System jobs may preempt lower-priority allocations."
    )
    preemption_sysbatch: Mapped[bool] = mapped_column(
        server_default=text("false"), comment="Sysbatch jobs may preempt."
    )
    preemption_batch: Mapped[bool] = mapped_column(server_default=text("false"), comment="Batch jobs may preempt.")
    preemption_service: Mapped[bool] = mapped_column(server_default=text("false"), comment="Service jobs may preempt.")
    memory_oversubscription: Mapped[bool] = mapped_column(
        server_default=text("false"), comment="Tasks may set memory_max above memory."
    )
    reject_job_registration: Mapped[bool] = mapped_column(
        server_default=text("false"), comment="Refuse job registrations (maintenance)."
    )
    pause_eval_broker: Mapped[bool] = mapped_column(
        server_default=text("false"), comment="Workers claim nothing while true."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    updated_at: Mapped[datetime] = updated_at_column()


class LeaderTerm(Base):
    __tablename__ = "leader_terms"
    __table_args__ = (
        CheckConstraint(f"role IN {sql_in(LEADER_ROLES)}", name="role"),
        {
            "comment": "Who holds each singleton role. The holder renews renewed_at every second; "
            "every leader-only write checks its term here (fencing)."
        },
    )

    role: Mapped[str] = mapped_column(primary_key=True, comment="applier or leader.")
    term: Mapped[int] = mapped_column(comment="Incremented at every election.")
    holder: Mapped[str] = mapped_column(comment="host:pid of the holder.")
    holder_backend_pid: Mapped[int] = mapped_column(
        Integer, comment="Postgres backend pid of the holder's lock connection (for takeover)."
    )
    acquired_at: Mapped[datetime] = mapped_column(comment="When this term began.")
    renewed_at: Mapped[datetime] = mapped_column(comment="Last renewal; stale means the holder is gone.")


class StateIndex(Base):
    __tablename__ = "state_index"
    __table_args__ = (
        # A snapshot's overall index (the newest logged one at or below the safe index) in one
        # backward probe instead of one per table name (snapshot_indexes, revision 0017).
        Index("ix_state_index_value", "value"),
        {
            "comment": "Append-only log of the state index: one row per table a write transaction changed, at "
            "that transaction's index (its xid plus state_index_offset()). Readers take max(value) per name at "
            "or below state_index_safe(); the leader deletes all but the newest row per name below it."
        },
    )

    name: Mapped[str] = mapped_column(primary_key=True, comment="A table name (or the pre-0015 '_global' floor).")
    value: Mapped[int] = mapped_column(
        primary_key=True, comment="The index of a write transaction that changed that table."
    )
