"""scheduler_workers: the scheduling loops of every worker process, for /v1/agent/schedulers

corral's scheduling workers are `corral worker` processes, not threads of the API server. Each
process publishes a row per scheduling loop (its enabled schedulers, start, status and what it is
doing) every few seconds, so that any API server answers Nomad's /v1/agent/schedulers with the
cluster's loops heard from recently.

Revision ID: 0032_scheduler_workers
Revises: 0031_published_timings
Create Date: 2026-11-29 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0032_scheduler_workers"
down_revision: str | None = "0031_published_timings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduler_workers",
        sa.Column("id", sa.Text(), nullable=False, comment="The loop's lease owner name: host:pid:hex."),
        sa.Column(
            "process",
            sa.Text(),
            nullable=False,
            comment="role:hostname:pid:start of the worker process running the loop.",
        ),
        sa.Column(
            "enabled_schedulers",
            postgresql.ARRAY(sa.Text()),
            nullable=False,
            comment="The evaluation types the loop claims (the process's --schedulers).",
        ),
        sa.Column(
            "started_at", postgresql.TIMESTAMP(timezone=True), nullable=False, comment="When the loop started."
        ),
        sa.Column(
            "status", sa.Text(), nullable=False, comment="Nomad's worker status: Starting, Started, Stopped."
        ),
        sa.Column(
            "workload_status",
            sa.Text(),
            nullable=False,
            comment="Nomad's workload status when published: WaitingToDequeue, Scheduling, Backoff, Stopped.",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the process last published the row.",
        ),
        sa.CheckConstraint("status IN ('Starting', 'Started', 'Stopped')", name=op.f("ck_scheduler_workers_status")),
        sa.CheckConstraint(
            "workload_status IN ('Starting', 'WaitingToDequeue', 'Scheduling', 'Backoff', 'Stopped')",
            name=op.f("ck_scheduler_workers_workload_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_workers")),
        comment="Each scheduling loop of every `corral worker` process (Nomad's scheduler workers), "
        "published every few seconds; /v1/agent/schedulers lists the loops heard from recently.",
    )


def downgrade() -> None:
    op.drop_table("scheduler_workers")
