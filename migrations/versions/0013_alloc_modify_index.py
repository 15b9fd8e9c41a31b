"""An index on allocations.modify_index

The API's index watcher asks, after every state change, which nodes' allocations changed
after an index (`node_changes_since`), so that only those nodes' blocking queries wake.
Without this index that question scans every allocation; with it, the cost follows the change.

Revision ID: 0013_alloc_modify_index
Revises: 0012_acl
Create Date: 2026-11-26 10:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013_alloc_modify_index"
down_revision: str | None = "0012_acl"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_allocations_modify_index", "allocations", ["modify_index"])


def downgrade() -> None:
    op.drop_index("ix_allocations_modify_index", table_name="allocations")
