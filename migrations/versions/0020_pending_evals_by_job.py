"""ix_evaluations_pending_by_job: a job's waiting evaluations, for the completion's coalescing

The applier's batched completion (sql/queries/applier.sql, complete_evals) cancels the pending
evaluations of each finished evaluation's job that its pass served. Right after a burst of
registrations, before autovacuum analyzed the table, the planner estimated one row for the
partial index ix_evaluations_ready and walked it (every pending evaluation of every job) for
each finished one: 2 ms a batch with 2,000 pending. This index has the same predicate with the
job as its key, so the planner prefers it whatever the statistics say.

Revision ID: 0020_pending_evals_by_job
Revises: 0019_plan_chunk_attempt
Create Date: 2026-11-27 02:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_pending_evals_by_job"
down_revision: str | None = "0019_plan_chunk_attempt"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_evaluations_pending_by_job",
        "evaluations",
        ["namespace", "job_id", "create_index"],
        unique=False,
        postgresql_where=sa.text("status = 'pending' AND lease_token IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_evaluations_pending_by_job", table_name="evaluations")
