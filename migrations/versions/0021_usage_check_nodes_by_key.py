"""The usage triggers' overcommit check reads the nodes it checks by key, not the whole table

corral_add_usage_v2 joined every node to the rows it had just written: each statement that
writes allocations read the nodes table in full (0.3 ms a batch of the applier at 1,000 nodes,
1.5 ms at 5,000). Version 3 (sql/functions/allocation_usage_v3.sql) adds `n.id = ANY(node_ids)`,
so the planner probes the primary key; the allocation triggers now call it. The v2 functions
stay.

Revision ID: 0021_usage_check_nodes_by_key
Revises: 0020_pending_evals_by_job
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0021_usage_check_nodes_by_key"
down_revision: str | None = "0020_pending_evals_by_job"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
TRIGGERS = {
    "insert": "REFERENCING NEW TABLE AS new_rows",
    "update": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "delete": "REFERENCING OLD TABLE AS old_rows",
}


def upgrade() -> None:
    op.execute((SQL_DIR / "functions" / "allocation_usage_v3.sql").read_text())


def downgrade() -> None:
    for event, transition in TRIGGERS.items():
        op.execute(
            f"CREATE OR REPLACE TRIGGER allocations_usage_{event} AFTER {event.upper()} ON allocations "
            f"{transition} FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_{event}_v2()"
        )
        op.execute(f"DROP FUNCTION corral_usage_after_{event}_v3()")
    op.execute("DROP FUNCTION corral_add_usage_v3(uuid[], bigint[], bigint[], bigint[], bigint[])")
