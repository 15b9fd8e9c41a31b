"""A worker's snapshot reads less: node_usage rows carry the index of their last change, and the
state index log is indexed by value

A worker read every node's usage for every evaluation (a row per node with live allocations:
the whole cluster, once it is in use). Now each row carries the state index of the transaction
that last changed it (a row trigger, sql/functions/usage_stamp_v1.sql), and a worker that holds
the usage as of a safe index reads only the rows stamped above it (issue 21).

ix_state_index_value: a snapshot's overall index (the newest logged index at or below the safe
index) was found with one probe per table name (a recursive scan over the names); now with one
backward probe over all of them.

Revision ID: 0017_snapshot_reads
Revises: 0016_plan_completes_eval
Create Date: 2026-11-26 20:00:00
"""

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0017_snapshot_reads"
down_revision: str | None = "0016_plan_completes_eval"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
COMMENT = (
    "State index of the transaction that last changed this row (set by the node_usage_stamp "
    "trigger); 0 for rows unchanged since this column was added. Workers read only rows above the "
    "safe index of their previous snapshot."
)


def upgrade() -> None:
    op.add_column(
        "node_usage",
        sa.Column("modify_index", sa.BigInteger(), server_default=sa.text("0"), nullable=False, comment=COMMENT),
    )
    op.execute((SQL_DIR / "functions" / "usage_stamp_v1.sql").read_text())
    op.create_index("ix_state_index_value", "state_index", ["value"])


def downgrade() -> None:
    op.drop_index("ix_state_index_value", table_name="state_index")
    op.execute("DROP TRIGGER node_usage_stamp ON node_usage")
    op.execute("DROP FUNCTION corral_usage_stamp_v1()")
    op.drop_column("node_usage", "modify_index")
