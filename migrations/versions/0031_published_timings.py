"""published_timings: the scheduler timers of every role process, for /v1/metrics

Workers and appliers time their work in their own processes (Nomad's nomad.nomad.worker.* and
nomad.nomad.plan.* timers); each publishes its cumulative figures here every few seconds, and
any API server's /v1/metrics sums the rows of processes heard from recently, so the timers the
API reports are the cluster's, not the API process's own (which schedules nothing).

Revision ID: 0031_published_timings
Revises: 0030_variable_events
Create Date: 2026-11-29 07:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0031_published_timings"
down_revision: str | None = "0030_variable_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "published_timings",
        sa.Column("process", sa.Text(), nullable=False, comment="role:hostname:pid:start of the publishing process."),
        sa.Column("name", sa.Text(), nullable=False, comment="Prometheus name of the timer or counter."),
        sa.Column(
            "labels", postgresql.ARRAY(sa.Text()), nullable=False, comment="Its labels as sorted key=value strings."
        ),
        sa.Column("kind", sa.Text(), nullable=False, comment="histogram or counter."),
        sa.Column("count", sa.Double(), nullable=False, comment="Observations (a counter's value)."),
        sa.Column("total", sa.Double(), nullable=False, comment="Sum of the observations in ms (a counter's value)."),
        sa.Column(
            "buckets",
            postgresql.ARRAY(sa.Double()),
            nullable=False,
            comment="Cumulative counts per bucket bound of app.metrics.timings.MS_BUCKETS, then +Inf.",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the process last published the row.",
        ),
        sa.PrimaryKeyConstraint("process", "name", "labels", name=op.f("pk_published_timings")),
        comment="Cumulative timers and counters of each worker/applier/leader process, published every few "
        "seconds; /v1/metrics sums the rows of processes heard from recently.",
    )


def downgrade() -> None:
    op.drop_table("published_timings")
