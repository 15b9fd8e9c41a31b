"""published_timings: the sum of squares, minimum and maximum of each timer's observations

Nomad's /v1/metrics JSON reports each sample's Min, Max and Stddev (go-metrics' AggregateSample);
Prometheus histograms keep only the count, sum and buckets, so each role now also publishes these.
Nullable: the rows of roles of the previous release leave them empty, and the summary then omits
those keys.

Revision ID: 0038_timing_aggregates
Revises: 0037_placement_metrics_text
Create Date: 2026-11-29 17:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0038_timing_aggregates"
down_revision: str | None = "0037_placement_metrics_text"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (
    ("sum_squares", "Sum of the squared observations (a counter: of its increments); empty from older roles."),
    ("minimum", "Smallest observation (a counter: increment) of the process; empty from older roles."),
    ("maximum", "Largest observation (a counter: increment) of the process; empty from older roles."),
)


def upgrade() -> None:
    for name, comment in COLUMNS:
        op.add_column("published_timings", sa.Column(name, sa.Double(), nullable=True, comment=comment))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column("published_timings", name)
