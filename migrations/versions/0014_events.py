"""events: the outbox behind GET /v1/event/stream

Row triggers on jobs, evaluations, allocations, deployments and nodes record each change that
took a state index, in the transaction of the change (sql/functions/events_v1.sql). The stream
reads the table up to the state index every blocking query trusts, so it never skips an event
that commits late with a lower index; the leader deletes events older than the retention.

Revision ID: 0014_events
Revises: 0013_alloc_modify_index
Create Date: 2026-11-26 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.schema import SQL_DIR

revision: str = "0014_events"
down_revision: str | None = "0013_alloc_modify_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> the noun of its trigger functions (corral_event_<noun>_insert_v1 / _update_v1)
WATCHED = {
    "jobs": "job",
    "evaluations": "evaluation",
    "allocations": "allocation",
    "deployments": "deployment",
    "nodes": "node",
}


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id",
            sa.BigInteger(),
            sa.Identity(always=True),
            nullable=False,
            comment="Insertion order: orders the events of one index, and the GC walks it oldest first.",
        ),
        sa.Column("event_index", sa.BigInteger(), nullable=False, comment="State index of the change (its Index)."),
        sa.Column(
            "topic",
            sa.Text(),
            nullable=False,
            comment="Nomad's Topic: Job, Evaluation, Allocation, Deployment or Node.",
        ),
        sa.Column(
            "type", sa.Text(), nullable=False, comment="Nomad's event Type (JobRegistered, PlanResult, NodeDrain, ...)."
        ),
        sa.Column("key", sa.Text(), nullable=False, comment="ID of the object (Key)."),
        sa.Column(
            "namespace", sa.Text(), nullable=False, comment="Namespace of the object; '' for nodes (not namespaced)."
        ),
        sa.Column(
            "filter_keys",
            postgresql.ARRAY(sa.Text()),
            nullable=True,
            comment="Nomad's FilterKeys: related IDs a topic key may also match (job, deployment).",
        ),
        sa.Column(
            "snapshot",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="The row as written (to_jsonb), rendered into Nomad's Payload when read.",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the change was written; events older than the retention are deleted.",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
        comment="Outbox of the event stream: one row per change of a job, evaluation, allocation, "
        "deployment or node that took a state index, written by triggers in the change's transaction.",
    )
    op.create_index("ix_events_event_index", "events", ["event_index"])
    op.execute(
        "ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05)"
    )
    op.execute((SQL_DIR / "functions" / "events_v1.sql").read_text())
    for table, noun in WATCHED.items():
        # Once per statement, from its transition table: a COPY of placements is one INSERT here.
        op.execute(
            f"CREATE TRIGGER events_insert AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows "
            f"FOR EACH STATEMENT EXECUTE FUNCTION corral_event_{noun}_insert_v1()"
        )
        # Per row, only for a new index or a later write of a row this transaction already wrote.
        op.execute(
            f"CREATE TRIGGER events_update AFTER UPDATE ON {table} FOR EACH ROW "
            "WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index OR OLD.xmin = NEW.xmin) "
            f"EXECUTE FUNCTION corral_event_{noun}_update_v1()"
        )


def downgrade() -> None:
    for table, noun in WATCHED.items():
        op.execute(f"DROP TRIGGER events_update ON {table}")
        op.execute(f"DROP TRIGGER events_insert ON {table}")
        op.execute(f"DROP FUNCTION corral_event_{noun}_update_v1()")
        op.execute(f"DROP FUNCTION corral_event_{noun}_insert_v1()")
    op.drop_index("ix_events_event_index", table_name="events")
    op.drop_table("events")
