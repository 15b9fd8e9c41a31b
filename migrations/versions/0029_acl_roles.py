"""acl_roles, acl_tokens.roles: Nomad's ACL roles

A role is a named set of policies (Nomad's ACLRole); a client token may link roles as well as
policies, and its effective policies are the union. Tokens keep the IDs of their roles: a role
renamed keeps its tokens, a role deleted drops out of them (read and resolution skip unknown
IDs, as Nomad's state store does). 'acl_roles' joins the state index names so role lists block
and report X-Nomad-Index like every other table.

Revision ID: 0029_acl_roles
Revises: 0028_job_submissions
Create Date: 2026-11-29 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0029_acl_roles"
down_revision: str | None = "0028_job_submissions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "acl_roles",
        sa.Column("id", sa.UUID(), nullable=False, comment="The role's ID (Nomad's ACLRole.ID), chosen by the server."),
        sa.Column("name", sa.Text(), nullable=False, comment="Unique role name: 1-128 letters, digits and '-'."),
        sa.Column(
            "description", sa.Text(), server_default=sa.text("''"), nullable=False, comment="Free text shown to operators."
        ),
        sa.Column(
            "policies",
            postgresql.ARRAY(sa.Text()),
            nullable=False,
            comment="Names of the ACL policies the role grants (each existed when the role was written).",
        ),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index", sa.BigInteger(), nullable=False, comment="State index of the last write to the row (X-Nomad-Index)."
        ),
        sa.CheckConstraint("cardinality(policies) > 0", name=op.f("ck_acl_roles_has_policies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acl_roles")),
        sa.UniqueConstraint("name", name=op.f("uq_acl_roles_name")),
        comment="ACL roles: named sets of policies that client tokens link by ID (Nomad's ACLRole).",
    )
    op.add_column(
        "acl_tokens",
        sa.Column(
            "roles",
            postgresql.ARRAY(sa.UUID()),
            server_default=sa.text("'{}'::uuid[]"),
            nullable=False,
            comment="IDs of the ACL roles a client token links; IDs of deleted roles are ignored.",
        ),
    )
    op.create_check_constraint(
        op.f("ck_acl_tokens_management_has_no_roles"), "acl_tokens", "type = 'client' OR cardinality(roles) = 0"
    )
    op.execute("INSERT INTO state_index (name, value) VALUES ('acl_roles', 1) ON CONFLICT DO NOTHING")


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name = 'acl_roles'")
    op.drop_constraint(op.f("ck_acl_tokens_management_has_no_roles"), "acl_tokens", type_="check")
    op.drop_column("acl_tokens", "roles")
    op.drop_table("acl_roles")
