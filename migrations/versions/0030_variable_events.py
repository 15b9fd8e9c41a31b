"""variable events: the event stream's Variable topic

Triggers on `variables` publish Nomad's TopicVariable events (VariableUpdated, with "Deleted" in
the payload of a delete) in the transaction of each write that takes a state index
(sql/functions/variable_events_v1.sql). The snapshot holds the metadata only, never the sealed
items.

Revision ID: 0030_variable_events
Revises: 0029_acl_roles
Create Date: 2026-11-29 07:20:00
"""

from collections.abc import Sequence

from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0030_variable_events"
down_revision: str | None = "0029_acl_roles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute((SQL_DIR / "functions" / "variable_events_v1.sql").read_text())
    op.execute(
        "CREATE TRIGGER events_insert AFTER INSERT ON variables REFERENCING NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION corral_event_variable_insert_v1()"
    )
    # A lock renewal or a re-seal by key rotation keeps the modify index: no event, as in Nomad.
    op.execute(
        "CREATE TRIGGER events_update AFTER UPDATE ON variables FOR EACH ROW "
        "WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index) EXECUTE FUNCTION corral_event_variable_update_v1()"
    )
    op.execute(
        "CREATE TRIGGER events_delete AFTER DELETE ON variables REFERENCING OLD TABLE AS old_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION corral_event_variable_delete_v1()"
    )


def downgrade() -> None:
    for trigger in ("events_delete", "events_update", "events_insert"):
        op.execute(f"DROP TRIGGER {trigger} ON variables")
    for noun in ("delete", "update", "insert"):
        op.execute(f"DROP FUNCTION corral_event_variable_{noun}_v1()")
    op.execute("DROP FUNCTION corral_variable_snapshot_v1(variables)")
