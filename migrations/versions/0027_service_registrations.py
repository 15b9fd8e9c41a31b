"""service_registrations: Nomad's native service catalog (`service { provider = "nomad" }`)

One row per registration a client made for a running allocation (Nomad's ServiceRegistration).
Row triggers on allocations and nodes delete an allocation's registrations when it turns
terminal or its node goes down (sql/functions/service_registrations_v1.sql); foreign keys
cascade when the allocation or node row is collected. Triggers on the table itself publish the
event stream's Service topic (ServiceRegistration, ServiceDeregistration).

Revision ID: 0027_service_registrations
Revises: 0026_node_host_volumes
Create Date: 2026-11-29 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.schema import SQL_DIR

revision: str = "0027_service_registrations"
down_revision: str | None = "0026_node_host_volumes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TERMINAL = "('complete', 'failed', 'lost')"


def upgrade() -> None:
    op.create_table(
        "service_registrations",
        sa.Column(
            "id",
            sa.Text(),
            nullable=False,
            comment="Nomad's registration ID: _nomad-task-<alloc>-<group-<name>|task>-<service>-<port label>.",
        ),
        sa.Column("service_name", sa.Text(), nullable=False, comment="The service's name (ServiceName)."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job that registered it."),
        sa.Column("node_id", sa.Uuid(), nullable=False, comment="Node running the allocation."),
        sa.Column("datacenter", sa.Text(), nullable=False, comment="Datacenter of that node."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="Job of the allocation."),
        sa.Column("alloc_id", sa.Uuid(), nullable=False, comment="Allocation the service runs in."),
        sa.Column(
            "tags",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'::text[]"),
            nullable=False,
            comment="The service's tags, interpolated by the client.",
        ),
        sa.Column("address", sa.Text(), nullable=False, comment="Address the service listens on (host mode)."),
        sa.Column("port", sa.Integer(), nullable=False, comment="Port the service listens on; 0 when it names none."),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the first registration."),
        sa.Column("modify_index", sa.BigInteger(), nullable=False, comment="State index of the latest upsert."),
        sa.ForeignKeyConstraint(
            ["alloc_id"], ["allocations.id"], name=op.f("fk_service_registrations_alloc_id"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["node_id"], ["nodes.id"], name=op.f("fk_service_registrations_node_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_registrations")),
        comment="Nomad's service catalog: the registrations of running allocations' provider-nomad services, "
        "written by their clients and deleted when the allocation turns terminal or its node goes down.",
    )
    op.create_index("ix_service_registrations_namespace_service_name", "service_registrations", ["namespace", "service_name"])
    op.create_index("ix_service_registrations_namespace_job_id", "service_registrations", ["namespace", "job_id"])
    op.create_index("ix_service_registrations_alloc_id", "service_registrations", ["alloc_id"])
    op.create_index("ix_service_registrations_node_id", "service_registrations", ["node_id"])
    # A state index name of its own, so service reads block on catalog changes only.
    op.execute(
        "INSERT INTO state_index (name, value) "
        "SELECT 'service_registrations', coalesce(max(value), 0) FROM state_index ON CONFLICT DO NOTHING"
    )
    op.execute((SQL_DIR / "functions" / "service_registrations_v1.sql").read_text())
    op.execute(
        "CREATE TRIGGER services_alloc_terminal AFTER UPDATE OF client_status ON allocations FOR EACH ROW "
        f"WHEN (NEW.client_status IN {TERMINAL} AND OLD.client_status NOT IN {TERMINAL}) "
        "EXECUTE FUNCTION corral_services_alloc_terminal_v1()"
    )
    op.execute(
        "CREATE TRIGGER services_node_down AFTER UPDATE OF status ON nodes FOR EACH ROW "
        "WHEN (NEW.status = 'down' AND OLD.status <> 'down') EXECUTE FUNCTION corral_services_node_down_v1()"
    )
    # The event stream's Service topic, in the transaction of each change.
    op.execute(
        "CREATE TRIGGER events_insert AFTER INSERT ON service_registrations REFERENCING NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION corral_event_service_insert_v1()"
    )
    op.execute(
        "CREATE TRIGGER events_update AFTER UPDATE ON service_registrations FOR EACH ROW "
        "WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index) EXECUTE FUNCTION corral_event_service_update_v1()"
    )
    op.execute(
        "CREATE TRIGGER events_delete AFTER DELETE ON service_registrations REFERENCING OLD TABLE AS old_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION corral_event_service_delete_v1()"
    )


def downgrade() -> None:
    for trigger in ("events_delete", "events_update", "events_insert"):
        op.execute(f"DROP TRIGGER {trigger} ON service_registrations")
    for noun in ("delete", "update", "insert"):
        op.execute(f"DROP FUNCTION corral_event_service_{noun}_v1()")
    op.execute("DROP TRIGGER services_node_down ON nodes")
    op.execute("DROP TRIGGER services_alloc_terminal ON allocations")
    op.execute("DROP FUNCTION corral_services_node_down_v1()")
    op.execute("DROP FUNCTION corral_services_alloc_terminal_v1()")
    op.execute("DELETE FROM state_index WHERE name = 'service_registrations'")
    op.drop_table("service_registrations")
