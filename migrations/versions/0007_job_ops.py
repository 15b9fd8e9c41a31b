"""job operations: scaling events per job and task group

Revision ID: 0007_job_ops
Revises: 0006_periodic
Create Date: 2026-11-21 21:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007_job_ops"
down_revision: str | None = "0006_periodic"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_scaling_events",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False, comment="Event number."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The scaled job."),
        sa.Column("task_group", sa.Text(), nullable=False, comment="The task group the event is about (Target.Group)."),
        sa.Column(
            "count",
            sa.Integer(),
            nullable=True,
            comment="Count asked for; NULL for an event that only reports (an Error without a Count).",
        ),
        sa.Column(
            "previous_count",
            sa.Integer(),
            nullable=True,
            comment="The group's count before the change; NULL when the count did not change.",
        ),
        sa.Column(
            "message", sa.Text(), nullable=False, comment="Message the caller gave (e.g. an autoscaler's reason)."
        ),
        sa.Column(
            "error",
            sa.Boolean(),
            nullable=False,
            comment="The event reports an error; such an event never changes the job.",
        ),
        sa.Column(
            "meta",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Caller's metadata for the event (Meta).",
        ),
        sa.Column(
            "eval_id",
            sa.UUID(),
            nullable=True,
            comment="The job-scaling evaluation created with the change. History, not a foreign key: kept after "
            "evaluation GC collects it.",
        ),
        sa.Column(
            "job_version",
            sa.Integer(),
            nullable=True,
            comment="The job version the change created; NULL when the job did not change.",
        ),
        sa.Column(
            "recorded_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the event was recorded (Nomad's Time).",
        ),
        sa.Column(
            "create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_job_scaling_events_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_scaling_events")),
        comment="Scaling events per job and task group (POST /v1/job/:id/scale), newest 20 per group kept; "
        "they go with their job.",
    )
    op.create_index(
        "ix_job_scaling_events_job_group",
        "job_scaling_events",
        ["namespace", "job_id", "task_group", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_job_scaling_events_job_group", table_name="job_scaling_events")
    op.drop_table("job_scaling_events")
