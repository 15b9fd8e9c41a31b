"""gc fixes: run log keeps its evaluation id, job GC candidates index, parent jobs as a foreign key,
job GC eligibility v2 (a dead job's allocations all go), batch timeouts in the run log

Revision ID: 0005_gc_fixes
Revises: 0004_client
Create Date: 2026-11-22 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0005_gc_fixes"
down_revision: str | None = "0004_client"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CANDIDATES = "stop OR purged_at IS NOT NULL OR type IN ('batch', 'sysbatch')"


def upgrade() -> None:
    # A forced-GC waiter finds its run by evaluation id even after a concurrent GC collected the
    # evaluation: the log keeps the id as history instead of a foreign key that nulls it.
    op.drop_constraint(op.f("fk_gc_runs_eval_id"), "gc_runs", type_="foreignkey")
    op.alter_column(
        "gc_runs",
        "eval_id",
        existing_type=sa.UUID(),
        existing_nullable=True,
        comment="The _core evaluation that ran it. History, not a foreign key: kept after GC collects "
        "that evaluation, so whoever waits on it still finds its run.",
    )
    op.add_column(
        "gc_runs",
        sa.Column(
            "timeouts",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Batches cancelled by statement_timeout (57014) and retried with half the rows.",
        ),
    )
    # Job GC walks its candidates (stopped, purged or batch jobs) in key order through this
    # index, once per run, instead of scanning every job for every batch.
    op.create_index(
        "ix_jobs_gc_candidates", "jobs", ["namespace", "id"], postgresql_where=sa.text(CANDIDATES)
    )
    # Children name their parent through a real foreign key: inserting a child key-shares the
    # parent, so job GC (which locks the parent FOR UPDATE SKIP LOCKED, then re-checks for
    # children) can never delete a parent under a child registered at the same moment.
    op.execute(
        "UPDATE jobs c SET parent_id = NULL WHERE c.parent_id IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM jobs p WHERE p.namespace = c.namespace AND p.id = c.parent_id)"
    )
    op.create_foreign_key(
        op.f("fk_jobs_namespace_parent_id"), "jobs", "jobs", ["namespace", "parent_id"], ["namespace", "id"]
    )
    op.alter_column(
        "jobs",
        "parent_id",
        existing_type=sa.Text(),
        existing_nullable=True,
        comment="Parent periodic or parameterized job of a launched child (foreign key: a parent "
        "outlives its children).",
    )
    op.execute((SQL_DIR / "functions" / "gc_v2.sql").read_text())
    op.execute((SQL_DIR / "views" / "v_gc_runs_v2.sql").read_text())


def downgrade() -> None:
    op.execute("DROP VIEW v_gc_runs")  # v2 has a column v1 lacks: replace cannot drop it
    op.execute((SQL_DIR / "views" / "v_gc_runs_v1.sql").read_text())
    op.execute("DROP FUNCTION IF EXISTS corral_job_collectable_v2(jobs, timestamptz)")
    op.alter_column(
        "jobs",
        "parent_id",
        existing_type=sa.Text(),
        existing_nullable=True,
        comment="Parent periodic or parameterized job of a launched child (soft reference).",
    )
    op.drop_constraint(op.f("fk_jobs_namespace_parent_id"), "jobs", type_="foreignkey")
    op.drop_index("ix_jobs_gc_candidates", table_name="jobs", postgresql_where=sa.text(CANDIDATES))
    op.drop_column("gc_runs", "timeouts")
    op.execute("UPDATE gc_runs g SET eval_id = NULL WHERE NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.id = g.eval_id)")
    op.alter_column(
        "gc_runs",
        "eval_id",
        existing_type=sa.UUID(),
        existing_nullable=True,
        comment="The _core evaluation that ran it (gone once GC'd).",
    )
    op.create_foreign_key(
        op.f("fk_gc_runs_eval_id"), "gc_runs", "evaluations", ["eval_id"], ["id"], ondelete="SET NULL"
    )
