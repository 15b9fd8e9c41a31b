"""client: forced client GC requests on nodes, client-side destruction time on allocations

Revision ID: 0004_client
Revises: 0002
Create Date: 2026-11-21 16:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_client"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "nodes",
        sa.Column(
            "gc_force_index",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="State index of the latest forced GC asked of this node's client (system gc, "
            "PUT /v1/client/gc); the client destroys every terminal allocation when it sees a newer one.",
        ),
    )
    op.add_column(
        "allocations",
        sa.Column(
            "client_gc_time",
            sa.TIMESTAMP(timezone=True),
            nullable=True,
            comment="When the client destroyed the allocation's directory and driver resources "
            "(client-side GC); NULL while it keeps them.",
        ),
    )


def downgrade() -> None:
    op.drop_column("allocations", "client_gc_time")
    op.drop_column("nodes", "gc_force_index")
