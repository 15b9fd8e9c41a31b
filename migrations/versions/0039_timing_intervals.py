"""timing_intervals: the roles' timers per 10 s go-metrics interval, for /v1/metrics's JSON

Nomad's /v1/metrics JSON reports go-metrics' last completed 10 s interval, not figures since each
process started; each role now also publishes its completed intervals here. A new table, read and
written only where it exists: roles of the previous release never touch it, and this release's
roles on the schema before it publish only their cumulative rows.

Revision ID: 0039_timing_intervals
Revises: 0038_timing_aggregates
Create Date: 2026-11-29 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0039_timing_intervals"
down_revision: str | None = "0038_timing_aggregates"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "timing_intervals",
        sa.Column("process", sa.Text(), nullable=False, comment="role:hostname:pid:start of the publishing process."),
        sa.Column("name", sa.Text(), nullable=False, comment="Prometheus name of the timer or counter."),
        sa.Column(
            "labels", postgresql.ARRAY(sa.Text()), nullable=False, comment="Its labels as sorted key=value strings."
        ),
        sa.Column(
            "interval_start",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="Start of the 10 s interval, aligned to the wall clock (go-metrics' Interval).",
        ),
        sa.Column("kind", sa.Text(), nullable=False, comment="histogram (a timer) or counter."),
        sa.Column(
            "count", sa.Double(), nullable=False, comment="Observations in the interval (a counter: increments)."
        ),
        sa.Column("total", sa.Double(), nullable=False, comment="Sum of the interval's observations (ms for a timer)."),
        sa.Column(
            "sum_squares", sa.Double(), nullable=False, comment="Sum of the squared observations of the interval."
        ),
        sa.Column("minimum", sa.Double(), nullable=False, comment="Smallest observation of the interval."),
        sa.Column("maximum", sa.Double(), nullable=False, comment="Largest observation of the interval."),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the process published the row.",
        ),
        sa.PrimaryKeyConstraint("process", "name", "labels", "interval_start", name=op.f("pk_timing_intervals")),
        comment="Each worker/applier/leader process's timers and counters per completed 10 s go-metrics "
        "interval (kept a few minutes); /v1/metrics's JSON merges the processes' last completed interval.",
    )


def downgrade() -> None:
    op.drop_table("timing_intervals")
