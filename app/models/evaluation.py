"""Evaluations: the unit of scheduling work, and the broker's queue."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column
from app.values.constants import CORE_JOBS, EVAL_STATUSES, EVAL_TERMINAL_STATUSES, EVAL_TRIGGERS, EVAL_TYPES, sql_in
from app.wire.allocation import AllocationMetricJson
from app.wire.evaluation import CoreParamsJson, PlanAnnotationsJson

PENDING_UNLEASED = "status = 'pending' AND lease_token IS NULL"


class Evaluation(Base):
    __tablename__ = "evaluations"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        CheckConstraint(f"status IN {sql_in(EVAL_STATUSES)}", name="status"),
        CheckConstraint(f"type IN {sql_in(EVAL_TYPES)}", name="type"),
        CheckConstraint(
            "(type = '_core') = (namespace IS NULL) AND (core_params IS NULL OR type = '_core') "
            f"AND (type <> '_core' OR job_id IN {sql_in(CORE_JOBS)})",
            name="core_fields",
        ),
        CheckConstraint(f"triggered_by IN {sql_in(EVAL_TRIGGERS)}", name="triggered_by"),
        CheckConstraint("priority >= 1", name="priority"),
        CheckConstraint("delivery_count >= 0", name="delivery_count"),
        CheckConstraint("(lease_token IS NULL) = (lease_expires_at IS NULL)", name="lease_fields_together"),
        CheckConstraint("lease_token IS NULL OR status = 'pending'", name="lease_only_while_pending"),
        Index("ix_evaluations_namespace_job_id", "namespace", "job_id", "create_index"),
        # The claim statement walks this index in priority-then-age order.
        Index(
            "ix_evaluations_ready",
            text("priority DESC"),
            "create_index",
            postgresql_where=text(PENDING_UNLEASED),
        ),
        # A job's waiting evaluations, which a completion coalesces (complete_evals). With the
        # same predicate as ix_evaluations_ready but the job as its key, the planner prefers it
        # to walking every pending evaluation even when its statistics predate a burst.
        Index(
            "ix_evaluations_pending_by_job",
            "namespace",
            "job_id",
            "create_index",
            postgresql_where=text(PENDING_UNLEASED),
        ),
        # Invariant 2: at most one evaluation per job in flight, enforced here.
        Index(
            "uq_evaluations_in_flight_job",
            "namespace",
            "job_id",
            unique=True,
            postgresql_where=text("lease_token IS NOT NULL"),
        ),
        Index(
            "ix_evaluations_lease_expiry",
            "lease_expires_at",
            postgresql_where=text("lease_token IS NOT NULL"),
        ),
        Index(
            "uq_evaluations_blocked_job",
            "namespace",
            "job_id",
            unique=True,
            postgresql_where=text("status = 'blocked'"),
        ),
        # The references: only the rows that have one (most have none), revision 0022.
        *(
            Index(f"ix_evaluations_{column}", column, postgresql_where=text(f"{column} IS NOT NULL"))
            for column in ("node_id", "deployment_id", "next_eval", "previous_eval", "blocked_eval")
        ),
        # Capacity on a node finds the system blocked evals waiting on it.
        Index(
            "ix_evaluations_blocked_nodes",
            "blocked_nodes",
            postgresql_using="gin",
            postgresql_where=text("status = 'blocked' AND blocked_nodes IS NOT NULL"),
        ),
        # A scheduled collector is queued at most once: a second tick (or leader) adds nothing.
        Index(
            "uq_evaluations_core_queued",
            "job_id",
            unique=True,
            postgresql_where=text("type = '_core' AND status = 'pending' AND job_id <> 'force-gc'"),
        ),
        Index(
            "ix_evaluations_gc",
            "modify_time",
            postgresql_where=text(f"status IN {sql_in(EVAL_TERMINAL_STATUSES)}"),
        ),
        {
            "comment": "Evaluations (Nomad fields plus broker lease fields). A pending row with no "
            "lease is queued; with a lease it is in flight on a worker."
        },
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Evaluation ID.")
    namespace: Mapped[str | None] = mapped_column(comment="Namespace of the job (NULL for _core).")
    job_id: Mapped[str] = mapped_column(
        comment="The job to evaluate; for _core evaluations the collector (eval-gc, job-gc, ..., force-gc)."
    )
    priority: Mapped[int] = mapped_column(Integer, comment="Priority (the job's unless overridden).")
    type: Mapped[str] = mapped_column(
        comment="Scheduler that processes it: service, batch, system, sysbatch, or _core (GC)."
    )
    triggered_by: Mapped[str] = mapped_column(comment="What caused it: job-register, node-update, ...")
    job_modify_index: Mapped[int] = mapped_column(comment="Job modify index when the eval was created.")
    node_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("nodes.id", ondelete="SET NULL"),
        comment="Node whose change triggered it (node-update, node-drain; system blocked evals).",
    )
    node_modify_index: Mapped[int | None] = mapped_column(comment="Node modify index at creation.")
    deployment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("deployments.id", ondelete="SET NULL"),
        comment="Deployment that triggered it or that it advanced.",
    )
    status: Mapped[str] = mapped_column(comment="pending, blocked, complete, failed or canceled.")
    status_description: Mapped[str] = mapped_column(server_default=text("''"), comment="Why the eval has its status.")
    wait_ns: Mapped[int] = mapped_column(
        server_default=text("0"), comment="Nomad's legacy Wait duration in nanoseconds."
    )
    wait_until: Mapped[datetime | None] = mapped_column(
        comment="Not claimable before this time (delayed reschedules, disconnect timeouts)."
    )
    not_before: Mapped[datetime | None] = mapped_column(
        comment="Broker back-off after a nack or a failed follow-up: not claimable before this."
    )
    # Soft references, as in Nomad: GC never rewrites them, so they may name a collected
    # evaluation (migration 0010_history_links says why).
    next_eval: Mapped[uuid.UUID | None] = mapped_column(
        comment="Eval created to follow this one (failed follow-up, rolling update). "
        "History: the ID stays after GC collects that evaluation.",
    )
    previous_eval: Mapped[uuid.UUID | None] = mapped_column(
        comment="Eval this one follows. History: the ID stays after GC collects that evaluation.",
    )
    blocked_eval: Mapped[uuid.UUID | None] = mapped_column(
        comment="Blocked eval created because this one could not place everything. "
        "History: the ID stays after GC collects that evaluation.",
    )
    failed_tg_allocs: Mapped[dict[str, AllocationMetricJson]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Per task group placement failure metrics (AllocMetric).",
    )
    class_eligibility: Mapped[dict[str, bool]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Computed class -> eligible, as seen by the scheduler; drives unblocking.",
    )
    blocked_nodes: Mapped[list[uuid.UUID] | None] = mapped_column(
        comment="System and sysbatch blocked evals: the nodes too full to place on. Only capacity on "
        "one of them releases the eval (Nomad's UnblockNode); NULL for every other eval, which "
        "capacity in a class it can use releases.",
    )
    escaped_computed_class: Mapped[bool] = mapped_column(
        server_default=text("false"),
        comment="Constraints reach beyond the computed class (unique.*): any node change unblocks.",
    )
    quota_limit_reached: Mapped[str] = mapped_column(
        server_default=text("''"), comment="Quota that blocked placement (kept for API parity)."
    )
    annotate_plan: Mapped[bool] = mapped_column(
        server_default=text("false"), comment="Ask the scheduler to annotate its plan (job plan)."
    )
    queued_allocations: Mapped[dict[str, int]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Task group -> allocations left unplaced."
    )
    plan_annotations: Mapped[PlanAnnotationsJson | None] = mapped_column(
        JSONB, comment="Desired task group updates and preemptions computed by the scheduler."
    )
    snapshot_index: Mapped[int] = mapped_column(
        server_default=text("0"), comment="State index the scheduler worked from."
    )
    core_params: Mapped[CoreParamsJson | None] = mapped_column(
        JSONB, comment="For _core evaluations: the GC age thresholds (seconds) chosen by whoever created it."
    )
    lease_token: Mapped[uuid.UUID | None] = mapped_column(
        comment="Fencing token of the current claim; every worker write must present it."
    )
    lease_owner: Mapped[str | None] = mapped_column(comment="Worker holding the claim (host:pid).")
    lease_expires_at: Mapped[datetime | None] = mapped_column(
        comment="The claim lapses at this time unless renewed; then any worker may take it."
    )
    delivery_count: Mapped[int] = mapped_column(
        Integer, server_default=text("0"), comment="How many times it was claimed (limit 3)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    create_time: Mapped[datetime] = mapped_column(server_default=text("now()"), comment="When the eval was created.")
    modify_time: Mapped[datetime] = mapped_column(
        server_default=text("now()"),
        comment="When the eval last changed; eval GC measures from here.",
    )
