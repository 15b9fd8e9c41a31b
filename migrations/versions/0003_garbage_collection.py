"""garbage collection: core evaluations, the GC run log, eligibility functions, the v_gc_runs view

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 16:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.schema import SQL_DIR

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_TYPES = "('service', 'batch', 'system', 'sysbatch')"
NEW_TYPES = "('service', 'batch', 'system', 'sysbatch', '_core')"
CORE_JOBS = "('eval-gc', 'job-gc', 'node-gc', 'deployment-gc', 'force-gc')"


def upgrade() -> None:
    _core_evaluations()
    op.create_table(
        "gc_runs",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False, comment="Run number."),
        sa.Column("eval_id", sa.UUID(), nullable=True, comment="The _core evaluation that ran it (gone once GC'd)."),
        sa.Column("kind", sa.Text(), nullable=False, comment="eval-gc, job-gc, node-gc, deployment-gc or force-gc."),
        sa.Column("status", sa.Text(), nullable=False, comment="running, complete, failed or interrupted."),
        sa.Column(
            "thresholds",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="Age thresholds in seconds the run applied, per collector (0 when forced).",
        ),
        sa.Column(
            "removed",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Rows deleted per kind: jobs, job_versions, evaluations, plans, plan_results, allocations, ...",
        ),
        sa.Column("batches", sa.Integer(), server_default=sa.text("0"), nullable=False, comment="Transactions run."),
        sa.Column(
            "longest_batch_ms",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Duration of the longest batch transaction (lock hold), in milliseconds.",
        ),
        sa.Column("worker", sa.Text(), nullable=False, comment="Worker that ran it (host:pid:tag)."),
        sa.Column("error", sa.Text(), nullable=True, comment="Why the run failed, if it did."),
        sa.Column(
            "started_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the run began.",
        ),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True, comment="When it ended."),
        sa.CheckConstraint(f"kind IN {CORE_JOBS}", name=op.f("ck_gc_runs_kind")),
        sa.CheckConstraint(
            "status IN ('running', 'complete', 'failed', 'interrupted')", name=op.f("ck_gc_runs_status")
        ),
        sa.ForeignKeyConstraint(["eval_id"], ["evaluations.id"], name=op.f("fk_gc_runs_eval_id"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gc_runs")),
        comment="One row per garbage-collection run: what it removed and how long it held locks. Pruned by GC "
        "itself (kept 7 days, at most 1000 rows).",
    )
    op.create_index(op.f("ix_gc_runs_eval_id"), "gc_runs", ["eval_id"])
    op.create_index("ix_gc_runs_started_at", "gc_runs", ["started_at"])
    op.execute("INSERT INTO state_index (name, value) VALUES ('gc_runs', 1) ON CONFLICT DO NOTHING")
    op.execute((SQL_DIR / "functions" / "gc_v1.sql").read_text())
    op.execute((SQL_DIR / "views" / "v_gc_runs_v1.sql").read_text())


def _core_evaluations() -> None:
    """Core (GC) evaluations have no job: namespace NULL leaves the job foreign key unchecked."""
    op.alter_column("evaluations", "namespace", nullable=True, comment="Namespace of the job (NULL for _core).")
    op.alter_column(
        "evaluations",
        "job_id",
        comment="The job to evaluate; for _core evaluations the collector (eval-gc, job-gc, ..., force-gc).",
    )
    op.alter_column(
        "evaluations", "type", comment="Scheduler that processes it: service, batch, system, sysbatch, or _core (GC)."
    )
    op.drop_constraint(op.f("ck_evaluations_type"), "evaluations", type_="check")
    op.create_check_constraint(op.f("ck_evaluations_type"), "evaluations", f"type IN {NEW_TYPES}")
    op.add_column(
        "evaluations",
        sa.Column(
            "core_params",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="For _core evaluations: the GC age thresholds (seconds) chosen by whoever created it.",
        ),
    )
    op.create_check_constraint(
        op.f("ck_evaluations_core_fields"),
        "evaluations",
        f"(type = '_core') = (namespace IS NULL) AND (core_params IS NULL OR type = '_core') "
        f"AND (type <> '_core' OR job_id IN {CORE_JOBS})",
    )
    # A scheduled collector is queued at most once: a second tick (or a second leader) adds nothing.
    op.create_index(
        "uq_evaluations_core_queued",
        "evaluations",
        ["job_id"],
        unique=True,
        postgresql_where=sa.text("type = '_core' AND status = 'pending' AND job_id <> 'force-gc'"),
    )


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_gc_runs")
    op.execute("DROP FUNCTION IF EXISTS corral_job_collectable_v1(jobs, timestamptz)")
    op.execute("DROP FUNCTION IF EXISTS corral_alloc_collectable_v1(allocations, jobs, timestamptz, boolean)")
    op.execute("DROP FUNCTION IF EXISTS corral_alloc_reschedule_pending_v1(allocations, jsonb, timestamptz)")
    op.execute("DROP FUNCTION IF EXISTS corral_alloc_done_v1(text, text, timestamptz, timestamptz)")
    op.execute("DELETE FROM state_index WHERE name = 'gc_runs'")
    op.drop_index("ix_gc_runs_started_at", table_name="gc_runs")
    op.drop_index(op.f("ix_gc_runs_eval_id"), table_name="gc_runs")
    op.drop_table("gc_runs")
    op.execute("DELETE FROM evaluations WHERE type = '_core'")
    op.drop_index("uq_evaluations_core_queued", table_name="evaluations")
    op.drop_constraint(op.f("ck_evaluations_core_fields"), "evaluations", type_="check")
    op.drop_column("evaluations", "core_params")
    op.drop_constraint(op.f("ck_evaluations_type"), "evaluations", type_="check")
    op.create_check_constraint(op.f("ck_evaluations_type"), "evaluations", f"type IN {OLD_TYPES}")
    op.alter_column("evaluations", "job_id", comment="The job to evaluate.")
    op.alter_column("evaluations", "type", comment="Scheduler that processes it: service, batch, system, sysbatch.")
    op.alter_column("evaluations", "namespace", nullable=False, comment="Namespace of the job.")
