"""The usage triggers' overcommit check never plans a nested loop

corral_add_usage_v3 joins the node_usage rows it has just upserted with the deltas it was
given, both common table expressions over the unnest of its array parameters. Its first calls
in a session are planned with the arrays' real lengths (a hash join for a big plan); after a
few calls PL/pgSQL keeps the generic plan, which reckons each unnest at a handful of rows and
joins them with a nested loop: for a plan on 5,000 nodes, 25 million comparisons in one
statement of the applier (about 0.7 s of Postgres CPU, +3.5 s over a job of 50,000 placements
in chunks of 5,000). The function now runs with enable_nestloop off: its cached plan joins
with hashes at any size and still probes the nodes' primary key for the ones it checks. The
setting lasts for the function's call only.

Revision ID: 0041_usage_check_no_nested_loop
Revises: 0040_alloc_events_lean
Create Date: 2026-11-30 08:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0041_usage_check_no_nested_loop"
down_revision: str | None = "0040_alloc_events_lean"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FUNCTION = "corral_add_usage_v3(uuid[], bigint[], bigint[], bigint[], bigint[])"


def upgrade() -> None:
    op.execute(f"ALTER FUNCTION {FUNCTION} SET enable_nestloop = off")


def downgrade() -> None:
    op.execute(f"ALTER FUNCTION {FUNCTION} RESET enable_nestloop")
