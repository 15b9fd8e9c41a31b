"""Allocations: a task group of a job placed on a node."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, Column, ForeignKey, ForeignKeyConstraint, Index, Integer, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column
from app.values.constants import ALLOC_CLIENT_STATUSES, ALLOC_DESIRED_STATUSES, sql_in
from app.wire.allocation import (
    AllocatedResourcesJson,
    AllocDeploymentStatusJson,
    DesiredTransitionJson,
    RescheduleTrackerJson,
    TaskStateJson,
)
from app.wire.json import JsonObject

LIVE_ALLOC = "desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')"


class Allocation(Base):
    __tablename__ = "allocations"
    # In the table, not in the mapper: the roles of a release run on the schema one revision
    # before its head (rolling upgrades), where a mapped new column would break every ORM read of
    # allocations. The applier writes it by COPY and GET /v1/allocation/:id reads it by hand
    # (app.store.allocs.placement_metrics_text), each tolerating its absence.
    __mapper_args__ = {"exclude_properties": ["placement_metrics"]}
    __table_args__ = (
        Column(
            "placement_metrics",
            Text,
            nullable=True,
            comment="Placement metrics (AllocMetric) as compact JSON text (app.wire.plan.PlacedMetricsJson). "
            "NULL: written before 0037 or by an older applier; see metrics.",
        ),
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        # No cascade: a job version stays while an allocation still runs it.
        ForeignKeyConstraint(
            ["namespace", "job_id", "job_version"],
            ["job_versions.namespace", "job_versions.job_id", "job_versions.version"],
        ),
        CheckConstraint(f"desired_status IN {sql_in(ALLOC_DESIRED_STATUSES)}", name="desired_status"),
        CheckConstraint(f"client_status IN {sql_in(ALLOC_CLIENT_STATUSES)}", name="client_status"),
        CheckConstraint(
            "cpu >= 0 AND memory_mb >= 0 AND disk_mb >= 0 AND memory_max_mb >= memory_mb",
            name="resources",
        ),
        # Most allocations replace none: only those that do are indexed (revision 0022).
        Index(
            "ix_allocations_previous_allocation",
            "previous_allocation",
            postgresql_where=text("previous_allocation IS NOT NULL"),
        ),
        Index("ix_allocations_namespace_job_id_job_version", "namespace", "job_id", "job_version"),
        Index("ix_allocations_live_by_node", "node_id", postgresql_where=text(LIVE_ALLOC)),
        Index(
            "ix_allocations_live_ports",
            "node_id",
            postgresql_where=text(LIVE_ALLOC + " AND host_ports <> '{}'"),
        ),
        Index(
            "ix_allocations_live_cores",
            "node_id",
            postgresql_where=text(LIVE_ALLOC + " AND reserved_cores <> '{}'"),
        ),
        # The API's index watcher asks which nodes' allocations changed after an index.
        Index("ix_allocations_modify_index", "modify_index"),
        Index(
            "ix_allocations_gc",
            "modify_time",
            postgresql_where=text("NOT (" + LIVE_ALLOC + ")"),
        ),
        {"comment": "Allocations: the mapping of a job's task group onto a node, with its lifecycle."},
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Allocation ID.")
    namespace: Mapped[str] = mapped_column(comment="Namespace of the job.")
    job_id: Mapped[str] = mapped_column(comment="Job the allocation runs.")
    job_version: Mapped[int] = mapped_column(Integer, comment="Job version the allocation runs.")
    eval_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("evaluations.id"),
        index=True,
        comment="Eval that last placed or updated it; the eval is kept while this row exists.",
    )
    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id"),
        index=True,
        comment="Node it is placed on; the node row is kept while this row exists.",
    )
    node_name: Mapped[str] = mapped_column(comment="Node name at placement (Nomad's NodeName).")
    task_group: Mapped[str] = mapped_column(comment="Task group of the job.")
    name: Mapped[str] = mapped_column(comment="Nomad name: '<job>.<group>[<index>]'.")
    desired_status: Mapped[str] = mapped_column(comment="What the servers want: run, stop or evict.")
    desired_description: Mapped[str] = mapped_column(server_default=text("''"), comment="Why desired_status was set.")
    desired_transition: Mapped[DesiredTransitionJson] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Pending transitions: {Migrate, Reschedule, ForceReschedule, NoShutdownDelay}.",
    )
    client_status: Mapped[str] = mapped_column(
        comment="What the client reports: pending, running, complete, failed, lost or unknown."
    )
    client_description: Mapped[str] = mapped_column(
        server_default=text("''"), comment="Client's explanation of client_status."
    )
    task_states: Mapped[dict[str, TaskStateJson]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Task name -> {State, Failed, Restarts, Events...}.",
    )
    deployment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("deployments.id", ondelete="SET NULL"),
        index=True,
        comment="Deployment that created it.",
    )
    deployment_status: Mapped[AllocDeploymentStatusJson | None] = mapped_column(
        JSONB, comment="Health within its deployment: {Healthy, Timestamp, Canary, ModifyIndex}."
    )
    # The history links below are soft references, as in Nomad: GC never rewrites them, so they
    # may name a collected allocation or evaluation (migration 0010_history_links says why).
    previous_allocation: Mapped[uuid.UUID | None] = mapped_column(
        comment="Allocation this one replaces (reschedule, migration, destructive update). "
        "History: the ID stays after GC collects that allocation.",
    )
    next_allocation: Mapped[uuid.UUID | None] = mapped_column(
        comment="Allocation that replaced this one. History: the ID stays after GC collects that allocation.",
    )
    preempted_allocations: Mapped[list[uuid.UUID]] = mapped_column(
        server_default=text("'{}'"), comment="Allocations evicted to make room for this one."
    )
    preempted_by_allocation: Mapped[uuid.UUID | None] = mapped_column(
        comment="Allocation whose placement evicted this one. History: the ID stays after GC collects that allocation.",
    )
    reschedule_tracker: Mapped[RescheduleTrackerJson | None] = mapped_column(
        JSONB, comment="Reschedule history: {Events:[{RescheduleTime, PrevAllocID, PrevNodeID, Delay}]}."
    )
    followup_eval_id: Mapped[uuid.UUID | None] = mapped_column(
        comment="Delayed eval that will reschedule this allocation. History: the ID stays after GC collects "
        "that evaluation, so the allocation never gets a second follow-up.",
    )
    metrics: Mapped[JsonObject] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Placement metrics as jsonb, as written before 0037 (readers take placement_metrics first).",
    )
    cpu: Mapped[int] = mapped_column(Integer, comment="CPU MHz reserved on the node (sum over tasks).")
    memory_mb: Mapped[int] = mapped_column(Integer, comment="Memory MB reserved (sum over tasks).")
    memory_max_mb: Mapped[int] = mapped_column(Integer, comment="Memory MB the tasks may burst to.")
    disk_mb: Mapped[int] = mapped_column(Integer, comment="Ephemeral disk MB reserved.")
    host_ports: Mapped[list[int]] = mapped_column(
        server_default=text("'{}'"), comment="Host ports the allocation holds on the node."
    )
    reserved_cores: Mapped[list[int]] = mapped_column(
        server_default=text("'{}'"),
        comment="Core IDs the allocation's tasks reserve whole on the node (resources { cores }).",
    )
    allocated_resources: Mapped[AllocatedResourcesJson] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Nomad AllocatedResources: per-task resources and shared networks/ports.",
    )
    client_gc_time: Mapped[datetime | None] = mapped_column(
        comment="When the client destroyed the allocation's directory and driver resources "
        "(client-side GC); NULL while it keeps them."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    alloc_modify_index: Mapped[int] = mapped_column(
        comment="State index of the last server-side change (excludes client updates)."
    )
    create_time: Mapped[datetime] = mapped_column(
        server_default=text("now()"), comment="When the allocation was created."
    )
    modify_time: Mapped[datetime] = mapped_column(
        server_default=text("now()"), comment="When it last changed; GC measures from here."
    )
