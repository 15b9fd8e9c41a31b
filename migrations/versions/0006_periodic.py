"""periodic: launch records that only move forward (and say whether the launch was skipped),
jobs.periodic means "has a periodic block" (Nomad's IsPeriodic), and an index over the periodic
parents the leader reads every second

Revision ID: 0006_periodic
Revises: 0005_gc_fixes
Create Date: 2026-11-21 21:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_periodic"
down_revision: str | None = "0005_gc_fixes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE_PERIODIC = "periodic AND NOT stop AND purged_at IS NULL"


def upgrade() -> None:
    op.add_column(
        "periodic_launches",
        sa.Column(
            "skipped",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="True when the launch at launch_time was skipped: prohibit_overlap and a child still running.",
        ),
    )
    op.alter_column(
        "periodic_launches",
        "launch_time",
        existing_type=sa.DateTime(timezone=True),
        existing_nullable=False,
        comment="Scheduled time of the last launch the leader dealt with (launched, or skipped). It "
        "only moves forward, so no time is ever launched twice, whichever leader tries.",
    )
    op.execute(
        "UPDATE jobs SET periodic = COALESCE(jsonb_typeof(spec -> 'Periodic') = 'object', false) "
        "WHERE periodic <> COALESCE(jsonb_typeof(spec -> 'Periodic') = 'object', false)"
    )
    op.alter_column(
        "jobs",
        "periodic",
        existing_type=sa.Boolean(),
        existing_nullable=False,
        comment="True when the job has a periodic block (enabled or not): it launches children "
        "and is never placed itself.",
    )
    # The leader reads the launchable parents every second without scanning every job.
    op.create_index("ix_jobs_periodic", "jobs", ["namespace", "id"], postgresql_where=sa.text(ACTIVE_PERIODIC))


def downgrade() -> None:
    op.drop_index("ix_jobs_periodic", table_name="jobs", postgresql_where=sa.text(ACTIVE_PERIODIC))
    op.alter_column(
        "jobs",
        "periodic",
        existing_type=sa.Boolean(),
        existing_nullable=False,
        comment="True when the job has an enabled periodic block.",
    )
    op.execute(
        "UPDATE jobs SET periodic = COALESCE((spec -> 'Periodic' ->> 'Enabled')::boolean, "
        "jsonb_typeof(spec -> 'Periodic') = 'object', false)"
    )
    op.alter_column(
        "periodic_launches",
        "launch_time",
        existing_type=sa.DateTime(timezone=True),
        existing_nullable=False,
        comment="Scheduled time of the last launch.",
    )
    op.drop_column("periodic_launches", "skipped")
