"""node_usage rows carry the index of their last change: workers read only what changed

A worker read every node's usage for every evaluation (a row per node with live allocations:
the whole cluster, once it is in use). Now each row carries the state index of the transaction
that last changed it (a row trigger, sql/functions/usage_stamp_v1.sql), and a worker that holds
the usage as of a safe index reads only the rows stamped above it (issue 21).

Revision ID: 0019_usage_modify_index
Revises: 0016_plan_completes_eval
Create Date: 2026-11-26 20:00:00
"""

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0019_usage_modify_index"
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


def downgrade() -> None:
    op.execute("DROP TRIGGER node_usage_stamp ON node_usage")
    op.execute("DROP FUNCTION corral_usage_stamp_v1()")
    op.drop_column("node_usage", "modify_index")
