"""Plans submitted by workers and the applier's verdict on each."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, Column, ForeignKey, Identity, Index, Integer, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column
from app.values.constants import PLAN_STATUSES, sql_in
from app.wire.evaluation import PlanAnnotationsJson
from app.wire.plan import AllocJson, CompletionJson, PlanDeploymentJson, StatusUpdateJson, StopJson


class Plan(Base):
    __tablename__ = "plans"
    # In the table, not in the mapper (as allocations.placement_metrics): only the worker's
    # submit_plan and the applier's next_plans touch it, by hand-written SQL, after a probe.
    __mapper_args__ = {"exclude_properties": ["placement_metrics"]}
    __table_args__ = (
        Column(
            "placement_metrics",
            Text,
            nullable=True,
            comment="The placements' metrics, one line per placement: the allocation ID, a space, the compact "
            "JSON of app.wire.plan.PlacedMetricsJson. NULL: none, or carried in node_allocation (older workers).",
        ),
        CheckConstraint(f"status IN {sql_in(PLAN_STATUSES)}", name="status"),
        CheckConstraint("attempt >= 1", name="attempt"),
        # A retried submit after an ambiguous commit must not create a second plan.
        Index("uq_plans_eval_attempt", "eval_id", "eval_token", "attempt", unique=True),
        Index(
            "ix_plans_queue",
            text("priority DESC"),
            "id",
            postgresql_where=text("status = 'pending'"),
        ),
        {"comment": "Plans: a worker's proposed placements, stops and preemptions for one eval."},
    )

    id: Mapped[int] = mapped_column(
        BigInteger, Identity(always=True), primary_key=True, comment="Plan number, in submit order."
    )
    eval_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("evaluations.id", ondelete="CASCADE"), comment="Evaluation the plan is for."
    )
    eval_token: Mapped[uuid.UUID] = mapped_column(
        comment="The eval's lease token at submit; the applier rejects a plan whose token is stale."
    )
    attempt: Mapped[int] = mapped_column(
        Integer, comment="1 for the first plan of a claim, +1 per retry and per chunk of a plan sent in parts."
    )
    namespace: Mapped[str] = mapped_column(comment="Namespace of the job (for psql readers).")
    job_id: Mapped[str] = mapped_column(comment="Job the plan is for (for psql readers).")
    priority: Mapped[int] = mapped_column(Integer, comment="Job priority; the applier takes higher first.")
    all_at_once: Mapped[bool] = mapped_column(comment="Apply whole or reject whole.")
    snapshot_index: Mapped[int] = mapped_column(comment="State index the worker planned against.")
    status: Mapped[str] = mapped_column(
        server_default=text("'pending'"), comment="pending, applied (fully or partly) or rejected."
    )
    # The JSON columns hold the wire format of app.wire.plan (encoded by app.pipeline.codecs.plan_codec).
    node_update: Mapped[dict[str, list[StopJson]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> allocations to stop."
    )
    node_allocation: Mapped[dict[str, list[AllocJson]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> allocations to create or update."
    )
    node_preemptions: Mapped[dict[str, list[StopJson]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> allocations to evict."
    )
    deployment: Mapped[PlanDeploymentJson | None] = mapped_column(
        JSONB, comment="Deployment to create or update with the plan."
    )
    deployment_updates: Mapped[list[StatusUpdateJson]] = mapped_column(
        JSONB, server_default=text("'[]'::jsonb"), comment="Deployment status changes."
    )
    annotations: Mapped[PlanAnnotationsJson | None] = mapped_column(JSONB, comment="Plan annotations (job plan).")
    completion: Mapped[CompletionJson | None] = mapped_column(
        JSONB,
        comment=(
            "How the applier completes the evaluation when it applies this plan in full (the worker's last "
            "plan): snapshot index, queued allocations, class eligibility, scheduled-at. NULL: the worker "
            "completes the evaluation itself."
        ),
    )
    created_at: Mapped[datetime] = created_at_column()
    applied_at: Mapped[datetime | None] = mapped_column(comment="When the applier decided.")


class PlanResult(Base):
    __tablename__ = "plan_results"
    __table_args__ = {"comment": "What the applier committed of each plan, and the refresh index for the rest."}

    plan_id: Mapped[int] = mapped_column(
        BigInteger,
        ForeignKey("plans.id", ondelete="CASCADE"),
        primary_key=True,
        comment="The plan (one result per plan: a plan is applied at most once).",
    )
    node_update: Mapped[dict[str, list[str]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> stopped allocation IDs committed."
    )
    node_allocation: Mapped[dict[str, list[str]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> placed allocation IDs committed."
    )
    node_preemptions: Mapped[dict[str, list[str]]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Node ID -> evicted allocation IDs committed."
    )
    rejected_nodes: Mapped[list[str]] = mapped_column(
        server_default=text("'{}'"), comment="Nodes whose share of the plan did not fit."
    )
    ineligible_nodes: Mapped[list[str]] = mapped_column(
        server_default=text("'{}'"), comment="Nodes marked ineligible by the rejection tracker."
    )
    refresh_index: Mapped[int] = mapped_column(
        server_default=text("0"),
        comment="Non-zero on a partial result: re-plan from at least this index.",
    )
    alloc_index: Mapped[int] = mapped_column(
        server_default=text("0"), comment="State index of the commit that wrote the allocations."
    )
    applier_term: Mapped[int] = mapped_column(comment="Leader term of the applier that decided.")
    completed_eval: Mapped[bool] = mapped_column(
        server_default=text("false"),
        comment="True when the applier completed the plan's evaluation in the commit that applied the plan.",
    )
    created_at: Mapped[datetime] = created_at_column()
