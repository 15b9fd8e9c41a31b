"""node usage kept by triggers (refusing overcommit), class unblock indexes, broker indexes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 14:25:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = "desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')"


def upgrade() -> None:
    op.create_table(
        "node_usage",
        sa.Column("node_id", sa.UUID(), nullable=False, comment="The node."),
        sa.Column("cpu", sa.BigInteger(), nullable=False, comment="CPU MHz held by live allocations."),
        sa.Column("memory_mb", sa.BigInteger(), nullable=False, comment="Memory MB held by live allocations."),
        sa.Column("disk_mb", sa.BigInteger(), nullable=False, comment="Disk MB held by live allocations."),
        sa.Column("live_allocs", sa.BigInteger(), nullable=False, comment="Number of live allocations."),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], name=op.f("fk_node_usage_node_id"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_node_usage")),
        comment="Resources held by live allocations (desired run, client not terminal) per node. Maintained by "
        "statement triggers on allocations, which also refuse any change that would push a node past its "
        "allocatable capacity (invariant 1, enforced by the database).",
    )
    op.create_table(
        "class_unblocks",
        sa.Column("computed_class", sa.Text(), nullable=False, comment="Computed node class."),
        sa.Column(
            "unblock_index", sa.BigInteger(), nullable=False, comment="State index of the latest capacity change."
        ),
        sa.PrimaryKeyConstraint("computed_class", name=op.f("pk_class_unblocks")),
        comment="Last state index at which capacity appeared for each computed node class; a blocked eval whose "
        "snapshot predates it was unblocked meanwhile (Nomad's missed-unblock check).",
    )
    op.execute(
        "ALTER TABLE node_usage SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.02, "
        "autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 1)"
    )
    op.execute((SQL_DIR / "functions" / "allocation_usage_v1.sql").read_text())
    # Existing live allocations (none before the pipeline existed, but be exact).
    op.execute(
        "INSERT INTO node_usage (node_id, cpu, memory_mb, disk_mb, live_allocs) "
        "SELECT node_id, sum(cpu), sum(memory_mb), sum(disk_mb), count(*) FROM allocations "
        "WHERE corral_alloc_live_v1(desired_status, client_status) GROUP BY node_id"
    )
    op.execute("INSERT INTO state_index (name, value) VALUES ('class_unblocks', 1)")
    # One blocked evaluation per job, enforced (Nomad dedups them after the fact).
    op.create_index(
        "uq_evaluations_blocked_job",
        "evaluations",
        ["namespace", "job_id"],
        unique=True,
        postgresql_where=sa.text("status = 'blocked'"),
    )
    op.create_index(
        "ix_allocations_live_ports",
        "allocations",
        ["node_id"],
        postgresql_where=sa.text(f"{LIVE} AND host_ports <> '{{}}'"),
    )


def downgrade() -> None:
    op.drop_index("ix_allocations_live_ports", table_name="allocations")
    op.drop_index("uq_evaluations_blocked_job", table_name="evaluations")
    for table in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS allocations_usage_{table} ON allocations")
        op.execute(f"DROP FUNCTION IF EXISTS corral_usage_after_{table}_v1()")
    op.execute("DROP FUNCTION IF EXISTS corral_add_usage_v1(uuid[], bigint[], bigint[], bigint[], bigint[])")
    op.execute("DROP FUNCTION IF EXISTS corral_alloc_live_v1(text, text)")
    op.execute("DELETE FROM state_index WHERE name = 'class_unblocks'")
    op.drop_table("class_unblocks")
    op.drop_table("node_usage")
