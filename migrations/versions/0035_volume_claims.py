"""host_volume_claims: Nomad 1.10's task group host volume claims (sticky volumes)

A group whose `volume` block says `sticky = true` claims the dynamic host volume its first
allocation was placed with; later placements of the group (reschedules, updates) go only to a
node holding a claimed volume. The plan applier writes a claim in the transaction that commits
the placement. A claim names its job (purging the job deletes its claims) and its volume (a
volume is not deleted while claimed; a purged node takes its volumes, and their claims, with
it). 'host_volume_claims' joins the state index names for the claim list's blocking queries.

Revision ID: 0035_volume_claims
Revises: 0034_acl_auth_methods
Create Date: 2026-11-29 13:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035_volume_claims"
down_revision: str | None = "0034_acl_auth_methods"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "host_volume_claims",
        sa.Column("id", sa.UUID(), nullable=False, comment="Nomad's claim ID, made by the applier."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="The claiming job's namespace."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The claiming job."),
        sa.Column("task_group", sa.Text(), nullable=False, comment="The claiming task group (TaskGroupName)."),
        sa.Column(
            "alloc_id",
            sa.UUID(),
            nullable=False,
            comment="The allocation placed with the volume most recently; no foreign key: the claim outlives "
            "the allocation's garbage collection, as Nomad's does.",
        ),
        sa.Column("volume_id", sa.UUID(), nullable=False, comment="The claimed dynamic host volume."),
        sa.Column("volume_name", sa.Text(), nullable=False, comment="The volume's name (the group's source)."),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_host_volume_claims_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["volume_id"], ["host_volumes.id"], name=op.f("fk_host_volume_claims_volume_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_volume_claims")),
        sa.UniqueConstraint(
            "namespace",
            "job_id",
            "task_group",
            "volume_id",
            name=op.f("uq_host_volume_claims_namespace_job_id_task_group_volume_id"),
        ),
        comment="Sticky host volume claims (Nomad's TaskGroupHostVolumeClaim): one per job, group and volume; "
        "a group with claims is placed only where a claimed volume is.",
    )
    op.create_index("ix_host_volume_claims_volume_id", "host_volume_claims", ["volume_id"])
    op.execute("INSERT INTO state_index (name, value) VALUES ('host_volume_claims', 1) ON CONFLICT DO NOTHING")


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name = 'host_volume_claims'")
    op.drop_table("host_volume_claims")
