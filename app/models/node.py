"""Client nodes and their heartbeats."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, Computed, ForeignKey, Index, Integer, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    create_index_column,
    created_at_column,
    modify_index_column,
    updated_at_column,
)
from app.values.constants import NODE_ELIGIBILITIES, NODE_STATUSES, sql_in
from app.wire.node import (
    DrainMetadataJson,
    DrainStrategyJson,
    DriverInfoJson,
    HostVolumeInfoJson,
    NodeReservedResourcesJson,
    NodeResourcesJson,
)


class Node(Base):
    __tablename__ = "nodes"
    __table_args__ = (
        CheckConstraint(f"status IN {sql_in(NODE_STATUSES)}", name="status"),
        CheckConstraint(f"scheduling_eligibility IN {sql_in(NODE_ELIGIBILITIES)}", name="scheduling_eligibility"),
        CheckConstraint(
            "cpu_shares >= 0 AND memory_mb >= 0 AND disk_mb >= 0 AND reserved_cpu >= 0 "
            "AND reserved_memory_mb >= 0 AND reserved_disk_mb >= 0",
            name="resources",
        ),
        Index("ix_nodes_computed_class", "computed_class"),
        Index("ix_nodes_gc", "status_updated_at", postgresql_where=text("status = 'down'")),
        {"comment": "Client nodes: capacity, fingerprint and lifecycle state. Heartbeats live apart."},
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Node ID chosen by the client.")
    secret_hash: Mapped[str] = mapped_column(
        comment="sha256 of the node's SecretID; the secret itself is only ever returned to the node."
    )
    name: Mapped[str] = mapped_column(comment="Node name (usually the hostname).")
    datacenter: Mapped[str] = mapped_column(comment="Datacenter the node is in.")
    node_class: Mapped[str] = mapped_column(server_default=text("''"), comment="Operator-set class.")
    node_pool: Mapped[str] = mapped_column(
        ForeignKey("node_pools.name", ondelete="RESTRICT"), index=True, comment="Node pool the node belongs to."
    )
    computed_class: Mapped[str] = mapped_column(
        comment="Hash of the scheduling-relevant fingerprint (datacenter, class, pool, attributes "
        "and meta without unique.*); feasibility is cached per class."
    )
    status: Mapped[str] = mapped_column(comment="initializing, ready, down or disconnected.")
    status_description: Mapped[str] = mapped_column(server_default=text("''"), comment="Why the node has its status.")
    status_updated_at: Mapped[datetime] = mapped_column(
        comment="When status last changed; node GC measures its threshold from here."
    )
    scheduling_eligibility: Mapped[str] = mapped_column(
        comment="eligible or ineligible for new placements (draining implies ineligible)."
    )
    drain_strategy: Mapped[DrainStrategyJson | None] = mapped_column(
        JSONB,
        comment="Active drain, Nomad's DrainStrategy JSON: {Deadline (ns), IgnoreSystemJobs, ForceDeadline, StartedAt "
        "(RFC 3339)}; NULL when not draining.",
    )
    drain: Mapped[bool] = mapped_column(
        Computed("drain_strategy IS NOT NULL", persisted=True),
        comment="True while a drain is in progress (derived from drain_strategy).",
    )
    last_drain: Mapped[DrainMetadataJson | None] = mapped_column(
        JSONB,
        comment="The most recent drain, Nomad's DrainMetadata JSON: Status, StartedAt and UpdatedAt (RFC 3339), "
        "AccessorID, Meta.",
    )
    attributes: Mapped[dict[str, str]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Fingerprinted attributes (${attr.*})."
    )
    meta: Mapped[dict[str, str]] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Operator metadata (${meta.*})."
    )
    drivers: Mapped[dict[str, DriverInfoJson]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Task drivers: name -> {Detected, Healthy, HealthDescription, Attributes}.",
    )
    host_volumes: Mapped[dict[str, HostVolumeInfoJson]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Host volumes the client declares: name -> {Name, Path, ReadOnly}.",
    )
    cpu_shares: Mapped[int] = mapped_column(Integer, comment="Total CPU in MHz.")
    memory_mb: Mapped[int] = mapped_column(Integer, comment="Total memory in MB.")
    disk_mb: Mapped[int] = mapped_column(Integer, comment="Total allocatable disk in MB.")
    reserved_cpu: Mapped[int] = mapped_column(
        Integer, server_default=text("0"), comment="CPU MHz held back from scheduling."
    )
    reserved_memory_mb: Mapped[int] = mapped_column(
        Integer, server_default=text("0"), comment="Memory MB held back from scheduling."
    )
    reserved_disk_mb: Mapped[int] = mapped_column(
        Integer, server_default=text("0"), comment="Disk MB held back from scheduling."
    )
    reserved_ports: Mapped[str] = mapped_column(
        server_default=text("''"),
        comment="Host ports held back, Nomad syntax e.g. '22,80,8000-8100'.",
    )
    node_resources: Mapped[NodeResourcesJson] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Full NodeResources as the client reported them (networks, devices, cores).",
    )
    reserved_resources: Mapped[NodeReservedResourcesJson] = mapped_column(
        JSONB, server_default=text("'{}'::jsonb"), comment="Full ReservedResources as reported."
    )
    http_addr: Mapped[str] = mapped_column(server_default=text("''"), comment="Client HTTP address.")
    gc_force_index: Mapped[int] = mapped_column(
        server_default=text("0"),
        comment="State index of the latest forced GC asked of this node's client (system gc, "
        "PUT /v1/client/gc); the client destroys every terminal allocation when it sees a newer one.",
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = updated_at_column()


class NodeHeartbeat(Base):
    __tablename__ = "node_heartbeats"
    __table_args__ = (
        Index("ix_node_heartbeats_expires_at", "expires_at"),
        {
            "prefixes": ["UNLOGGED"],
            "comment": "Last heartbeat per node. UNLOGGED: lost on a crash by design; the leader "
            "then grants every node the failover TTL before marking any down.",
        },
    )

    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True, comment="The node."
    )
    last_seen_at: Mapped[datetime] = mapped_column(comment="When the node last heartbeated.")
    ttl_ms: Mapped[int] = mapped_column(Integer, comment="TTL granted to the node at its last heartbeat.")
    expires_at: Mapped[datetime] = mapped_column(
        comment="last_seen_at + ttl + grace: after this the node is marked down."
    )
