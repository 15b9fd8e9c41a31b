"""Allocations record the whole cores they reserve (resources { cores = N })

Nomad reserves whole cores for a task that asks for `cores` (AllocatedCpuResources.ReservedCores).
The allocation's AllocatedResources.Tasks carries them per task for the API and the client; this
column holds them flattened, so the scheduler's snapshot and the applier's check read the cores
a node's live allocations hold as they read the host ports: from the few rows that have any,
through a partial index.

Revision ID: 0024_reserved_cores
Revises: 0023_nomad_json_times
Create Date: 2026-11-29 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.migration_ops import create_index_concurrently, drop_index_concurrently

revision: str = "0024_reserved_cores"
down_revision: str | None = "0023_nomad_json_times"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = "desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')"


def upgrade() -> None:
    op.add_column(
        "allocations",
        sa.Column(
            "reserved_cores",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=sa.text("'{}'"),
            nullable=False,
            comment="Core IDs the allocation's tasks reserve whole on the node (resources { cores }).",
        ),
    )
    # allocations is hot: the index is built without blocking placements (rolling upgrades).
    create_index_concurrently(
        "ix_allocations_live_cores",
        "allocations",
        ["node_id"],
        postgresql_where=sa.text(f"{LIVE} AND reserved_cores <> '{{}}'"),
    )


def downgrade() -> None:
    drop_index_concurrently("ix_allocations_live_cores")
    op.drop_column("allocations", "reserved_cores")
