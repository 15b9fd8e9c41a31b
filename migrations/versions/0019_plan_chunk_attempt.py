"""plans.attempt also numbers the chunks of one pass

A worker sends a big plan in chunks (CORRAL_PLAN_CHUNK_PLACEMENTS), each a plan row of its own
with the next attempt number, so the column's comment no longer says "+1 per retry" only. No
data changes: attempt stays the submit's idempotency key within one claim.

Revision ID: 0019_plan_chunk_attempt
Revises: 0018_usage_check_join
Create Date: 2026-11-27 01:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019_plan_chunk_attempt"
down_revision: str | None = "0018_usage_check_join"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = "1 for the first plan of a claim, +1 per retry and per chunk of a plan sent in parts."
OLD = "1 for the first plan of a claim, +1 per retry."


def upgrade() -> None:
    op.execute(f"COMMENT ON COLUMN plans.attempt IS '{NEW}'")


def downgrade() -> None:
    op.execute(f"COMMENT ON COLUMN plans.attempt IS '{OLD}'")
