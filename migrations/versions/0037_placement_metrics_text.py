"""Placement metrics travel and rest as text, not jsonb

A big plan carries every placement's metrics (Nomad's AllocMetric: nodes evaluated, the top
scores with each scorer's part): about 550 bytes a placement, three times the rest of it.
Postgres parsed them as jsonb twice (the plan's node_allocation, then allocations.metrics),
which cost more than the placements themselves (docs/benchmarks-log.md, issue 40). Nothing
queries inside them: the API decodes them per allocation. So the plan carries them in a text
column of their own (one line per placement, stored out of line without compression) and the
allocation keeps them as text. The jsonb column stays for rows written before and for roles of
the previous release during a rolling upgrade; readers take the text column first.

Revision ID: 0037_placement_metrics_text
Revises: 0036_acl_oidc_requests
Create Date: 2026-11-29 13:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0037_placement_metrics_text"
down_revision: str | None = "0036_acl_oidc_requests"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PLAN_COMMENT = (
    "The placements' metrics, one line per placement: the allocation ID, a space, the compact JSON "
    "of app.wire.plan.PlacedMetricsJson. NULL: none, or carried in node_allocation (older workers)."
)
ALLOC_COMMENT = (
    "Placement metrics (AllocMetric) as compact JSON text (app.wire.plan.PlacedMetricsJson). NULL: "
    "written before 0037 or by an older applier; see metrics."
)


def upgrade() -> None:
    # Adding a nullable column without a default rewrites nothing; the global lock_timeout keeps
    # the brief exclusive lock from queueing behind long transactions on these hot tables.
    op.add_column("plans", sa.Column("placement_metrics", sa.Text(), nullable=True, comment=PLAN_COMMENT))
    # Out of line and uncompressed: a plan's lines are read once, by the applier.
    op.execute("ALTER TABLE plans ALTER COLUMN placement_metrics SET STORAGE EXTERNAL")
    op.add_column("allocations", sa.Column("placement_metrics", sa.Text(), nullable=True, comment=ALLOC_COMMENT))
    op.execute(
        "COMMENT ON COLUMN allocations.metrics IS 'Placement metrics as jsonb, as written before 0037 "
        "(readers take placement_metrics first).'"
    )


def downgrade() -> None:
    op.execute(
        "COMMENT ON COLUMN allocations.metrics IS 'Placement metrics (AllocMetric): nodes evaluated, filtered, scores.'"
    )
    op.drop_column("allocations", "placement_metrics")
    op.drop_column("plans", "placement_metrics")
