"""host_volumes: Nomad 1.10's dynamic host volumes

A dynamic host volume is a directory a client creates (the built-in `mkdir` plugin) or one an
operator made and registers, on one node, in one namespace; a group's `volume { type = "host" }`
mounts it by name like a client's static `host_volume`. 'host_volumes' joins the state index names
so the volume list blocks and reports its index. The snapshot reads ready volumes with the nodes,
so every write that changes a volume's state also takes the 'nodes' index.

Revision ID: 0033_host_volumes
Revises: 0032_scheduler_workers
Create Date: 2026-11-29 10:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0033_host_volumes"
down_revision: str | None = "0032_scheduler_workers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "host_volumes",
        sa.Column("id", sa.UUID(), nullable=False, comment="Nomad's ID, made by the server."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace whose jobs may mount the volume."),
        sa.Column("name", sa.Text(), nullable=False, comment="Name a group's volume block names as its source."),
        sa.Column(
            "plugin_id", sa.Text(), nullable=False, comment="Plugin that created it (mkdir); empty for a registered one."
        ),
        sa.Column("node_id", sa.UUID(), nullable=False, comment="The node the volume lives on."),
        sa.Column("node_pool", sa.Text(), nullable=False, comment="That node's pool when the volume was placed."),
        sa.Column(
            "constraints",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="Nomad's Constraints that chose (or checked) the node, as JSON.",
        ),
        sa.Column("requested_capacity_min_bytes", sa.BigInteger(), nullable=False, comment="capacity_min asked for."),
        sa.Column("requested_capacity_max_bytes", sa.BigInteger(), nullable=False, comment="capacity_max asked for."),
        sa.Column("capacity_bytes", sa.BigInteger(), nullable=False, comment="Capacity the client reported."),
        sa.Column(
            "requested_capabilities",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="Nomad's RequestedCapabilities (attachment and access modes), as JSON.",
        ),
        sa.Column(
            "parameters",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="Opaque string parameters for the plugin.",
        ),
        sa.Column(
            "host_path", sa.Text(), nullable=False, comment="Directory on the node; empty until the client reports it."
        ),
        sa.Column(
            "state",
            sa.Text(),
            nullable=False,
            comment="pending (the client has not reported it), ready (mountable) or unavailable (the node no "
            "longer reports it).",
        ),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time of the last write to the row.",
        ),
        sa.CheckConstraint("state IN ('pending', 'ready', 'unavailable')", name=op.f("ck_host_volumes_state")),
        sa.ForeignKeyConstraint(
            ["node_id"], ["nodes.id"], name=op.f("fk_host_volumes_node_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_volumes")),
        comment="Dynamic host volumes (Nomad 1.10): directories on one node that jobs of one namespace mount by "
        "name. A node that is purged takes its volumes with it.",
    )
    op.create_index("ix_host_volumes_namespace_name", "host_volumes", ["namespace", "name"])
    op.create_index("ix_host_volumes_node_id", "host_volumes", ["node_id"])
    op.execute("INSERT INTO state_index (name, value) VALUES ('host_volumes', 1) ON CONFLICT DO NOTHING")


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name = 'host_volumes'")
    op.drop_table("host_volumes")
