"""The garbage-collection run log."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, Identity, Index, Integer, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base
from app.values.constants import CORE_JOBS, sql_in

GC_RUN_STATUSES = ("running", "complete", "failed", "interrupted")


class GcRun(Base):
    __tablename__ = "gc_runs"
    __table_args__ = (
        CheckConstraint(f"kind IN {sql_in(CORE_JOBS)}", name="kind"),
        CheckConstraint(f"status IN {sql_in(GC_RUN_STATUSES)}", name="status"),
        Index("ix_gc_runs_started_at", "started_at"),
        {
            "comment": "One row per garbage-collection run: what it removed and how long it held locks. Pruned "
            "by GC itself (kept 7 days, at most 1000 rows)."
        },
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True, comment="Run number.")
    eval_id: Mapped[uuid.UUID | None] = mapped_column(
        index=True,
        comment="The _core evaluation that ran it. History, not a foreign key: kept after GC collects "
        "that evaluation, so whoever waits on it still finds its run.",
    )
    kind: Mapped[str] = mapped_column(comment="eval-gc, job-gc, node-gc, deployment-gc or force-gc.")
    status: Mapped[str] = mapped_column(comment="running, complete, failed or interrupted.")
    thresholds: Mapped[dict[str, int]] = mapped_column(
        JSONB, comment="Age thresholds in seconds the run applied, per collector (0 when forced)."
    )
    removed: Mapped[dict[str, int]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Rows deleted per kind: jobs, job_versions, evaluations, plans, plan_results, allocations, ...",
    )
    batches: Mapped[int] = mapped_column(Integer, server_default=text("0"), comment="Transactions run.")
    longest_batch_ms: Mapped[int] = mapped_column(
        Integer,
        server_default=text("0"),
        comment="Duration of the longest batch transaction (lock hold), in milliseconds.",
    )
    timeouts: Mapped[int] = mapped_column(
        Integer,
        server_default=text("0"),
        comment="Batches cancelled by statement_timeout (57014) and retried with half the rows.",
    )
    worker: Mapped[str] = mapped_column(comment="Worker that ran it (host:pid:tag).")
    error: Mapped[str | None] = mapped_column(comment="Why the run failed, if it did.")
    started_at: Mapped[datetime] = mapped_column(server_default=text("now()"), comment="When the run began.")
    finished_at: Mapped[datetime | None] = mapped_column(comment="When it ended.")
