"""The usage triggers' overcommit check joins by hash: a plan touching 5,000 nodes spent about
2 s in it

corral_add_usage_v1 ended its overcommit check with LIMIT 1, so the planner chose a nested loop
between the rows it had just written and the deltas (issue 21: 25 million comparisons for a
50,000-placement batch job on 5,000 nodes). Version 2 (sql/functions/allocation_usage_v2.sql)
is the same check without the LIMIT; the allocation triggers now call it. The v1 functions stay.

Revision ID: 0018_usage_check_join
Revises: 0017_snapshot_reads
Create Date: 2026-11-26 23:20:00
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0018_usage_check_join"
down_revision: str | None = "0017_snapshot_reads"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
TRIGGERS = {
    "insert": "REFERENCING NEW TABLE AS new_rows",
    "update": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "delete": "REFERENCING OLD TABLE AS old_rows",
}


def upgrade() -> None:
    op.execute((SQL_DIR / "functions" / "allocation_usage_v2.sql").read_text())


def downgrade() -> None:
    for event, transition in TRIGGERS.items():
        op.execute(
            f"CREATE OR REPLACE TRIGGER allocations_usage_{event} AFTER {event.upper()} ON allocations "
            f"{transition} FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_{event}_v1()"
        )
        op.execute(f"DROP FUNCTION corral_usage_after_{event}_v2()")
    op.execute("DROP FUNCTION corral_add_usage_v2(uuid[], bigint[], bigint[], bigint[], bigint[])")
