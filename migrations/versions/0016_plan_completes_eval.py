"""A plan may complete its evaluation: one write per evaluation on the hot path

The worker submits its plan with the completion it would write itself if the plan is applied in
full (issue 21, item 2). The applier, in the same transaction that applies the plan, completes the
evaluation (fenced by the lease token it already checked) and says so in the plan's result; the
worker then writes nothing more. A partial plan, a lost token or a submission without a
completion leave the completion to the worker, as before.

Revision ID: 0016_plan_completes_eval
Revises: 0015_state_index
Create Date: 2026-11-26 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016_plan_completes_eval"
down_revision: str | None = "0015_state_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COMPLETION_COMMENT = (
    "How the applier completes the evaluation when it applies this plan in full (the worker's last "
    "plan): snapshot index, queued allocations, class eligibility, scheduled-at. NULL: the worker "
    "completes the evaluation itself."
)
COMPLETED_COMMENT = "True when the applier completed the plan's evaluation in the commit that applied the plan."


def upgrade() -> None:
    op.add_column("plans", sa.Column("completion", postgresql.JSONB(), nullable=True, comment=COMPLETION_COMMENT))
    op.add_column(
        "plan_results",
        sa.Column(
            "completed_eval", sa.Boolean(), server_default=sa.text("false"), nullable=False, comment=COMPLETED_COMMENT
        ),
    )


def downgrade() -> None:
    op.drop_column("plan_results", "completed_eval")
    op.drop_column("plans", "completion")
