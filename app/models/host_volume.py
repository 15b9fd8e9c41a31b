"""Dynamic host volumes (Nomad 1.10's HostVolume): a directory on one node that the jobs of one
namespace mount by name, created by the client's mkdir plugin or registered from an existing path."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, created_at_column, modify_index_column, updated_at_column
from app.wire.api.api_host_volumes import HostVolumeCapabilityJson
from app.wire.job import ConstraintSpec
from app.wire.json import JsonObject

HOST_VOLUME_STATES = ("pending", "ready", "unavailable")


class HostVolume(Base):
    __tablename__ = "host_volumes"
    __table_args__ = (
        CheckConstraint("state IN ('pending', 'ready', 'unavailable')", name="state"),
        Index("ix_host_volumes_namespace_name", "namespace", "name"),
        Index("ix_host_volumes_node_id", "node_id"),
        {
            "comment": "Dynamic host volumes (Nomad 1.10): directories on one node that jobs of one namespace mount "
            "by name. A node that is purged takes its volumes with it."
        },
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Nomad's ID, made by the server.")
    namespace: Mapped[str] = mapped_column(comment="Namespace whose jobs may mount the volume.")
    name: Mapped[str] = mapped_column(comment="Name a group's volume block names as its source.")
    plugin_id: Mapped[str] = mapped_column(comment="Plugin that created it (mkdir); empty for a registered one.")
    node_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), comment="The node the volume lives on."
    )
    node_pool: Mapped[str] = mapped_column(comment="That node's pool when the volume was placed.")
    constraints: Mapped[list[ConstraintSpec]] = mapped_column(
        JSONB, comment="Nomad's Constraints that chose (or checked) the node, as JSON."
    )
    requested_capacity_min_bytes: Mapped[int] = mapped_column(comment="capacity_min asked for.")
    requested_capacity_max_bytes: Mapped[int] = mapped_column(comment="capacity_max asked for.")
    capacity_bytes: Mapped[int] = mapped_column(comment="Capacity the client reported.")
    requested_capabilities: Mapped[list[HostVolumeCapabilityJson]] = mapped_column(
        JSONB, comment="Nomad's RequestedCapabilities (attachment and access modes), as JSON."
    )
    parameters: Mapped[JsonObject] = mapped_column(JSONB, comment="Opaque string parameters for the plugin.")
    host_path: Mapped[str] = mapped_column(comment="Directory on the node; empty until the client reports it.")
    state: Mapped[str] = mapped_column(
        comment="pending (the client has not reported it), ready (mountable) or unavailable (the node no longer "
        "reports it)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = updated_at_column()
