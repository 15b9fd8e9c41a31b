"""Reference indexes hold only the rows that have a reference; a duplicate index goes

Most evaluations and allocations carry no node, deployment, previous, next or blocked
evaluation, or previous allocation: their index entries were NULLs that no query ever looks up
(every lookup, the foreign keys' cascades included, asks for one ID). Every claim, completion
and cancel of an evaluation is an update PostgreSQL cannot do in place (a partial index's
predicate names its lease and status), so each wrote a NULL entry into five such indexes, and
every new allocation one more. Now each index holds only the non-NULL rows (`WHERE col IS NOT
NULL`, which `col = $1` implies, so the planner still uses it). ix_evaluations_blocked was the
same index as uq_evaluations_blocked_job without the uniqueness, and is dropped.

Revision ID: 0022_sparse_reference_indexes
Revises: 0021_usage_check_nodes_by_key
Create Date: 2026-11-27 11:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_sparse_reference_indexes"
down_revision: str | None = "0021_usage_check_nodes_by_key"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SPARSE = (
    ("evaluations", "node_id"),
    ("evaluations", "deployment_id"),
    ("evaluations", "next_eval"),
    ("evaluations", "previous_eval"),
    ("evaluations", "blocked_eval"),
    ("allocations", "previous_allocation"),
)


def upgrade() -> None:
    op.drop_index("ix_evaluations_blocked", table_name="evaluations")
    for table, column in SPARSE:
        name = f"ix_{table}_{column}"
        op.drop_index(name, table_name=table)
        op.create_index(name, table, [column], postgresql_where=sa.text(f"{column} IS NOT NULL"))


def downgrade() -> None:
    for table, column in SPARSE:
        name = f"ix_{table}_{column}"
        op.drop_index(name, table_name=table)
        op.create_index(name, table, [column])
    op.create_index(
        "ix_evaluations_blocked", "evaluations", ["namespace", "job_id"], postgresql_where=sa.text("status = 'blocked'")
    )
