"""Allocation events' snapshots without placement metrics

Version 2 of the allocations' event triggers (sql/functions/events_v2.sql) leaves
placement_metrics out of the snapshot; the event stream reads it from the allocation when it
renders the event. Only functions and triggers change: the roles of the previous release write
allocations as before, and this release's stream reads a version 1 snapshot's own copy first.

Revision ID: 0040_alloc_events_lean
Revises: 0039_timing_intervals
Create Date: 2026-11-29 23:10:00
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0040_alloc_events_lean"
down_revision: str | None = "0039_timing_intervals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


def upgrade() -> None:
    op.execute((SQL_DIR / "functions" / "events_v2.sql").read_text())


def downgrade() -> None:
    op.execute(
        "CREATE OR REPLACE TRIGGER events_insert AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION corral_event_allocation_insert_v1()"
    )
    op.execute(
        "CREATE OR REPLACE TRIGGER events_update AFTER UPDATE ON allocations FOR EACH ROW "
        "WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index OR OLD.xmin = NEW.xmin) "
        "EXECUTE FUNCTION corral_event_allocation_update_v1()"
    )
    op.execute("DROP FUNCTION corral_event_allocation_update_v2()")
    op.execute("DROP FUNCTION corral_event_allocation_insert_v2()")
