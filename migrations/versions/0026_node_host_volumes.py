"""Nodes carry the host volumes their client declares (Nomad's Node.HostVolumes): the scheduler
places a group that asks for a host volume only on a node that has it.

Revision ID: 0026_node_host_volumes
Revises: 0025_variables_keyring
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0026_node_host_volumes"
down_revision: str | None = "0025_variables_keyring"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "nodes",
        sa.Column(
            "host_volumes",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Host volumes the client declares: name -> {Name, Path, ReadOnly}.",
        ),
    )


def downgrade() -> None:
    op.drop_column("nodes", "host_volumes")
