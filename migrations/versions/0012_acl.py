"""acl_policies, acl_tokens, acl_bootstrap: Nomad's ACL system

Tokens are stored by the SHA-256 of their secret (as node secrets are), so a read of the
database does not hand out working credentials. `acl_bootstrap` records the state index of the
bootstrap: a second bootstrap needs that value as its reset index (Nomad's semantics).
'acl_policies' and 'acl_tokens' join the state index names so their lists block and report
X-Nomad-Index like every other table.

Revision ID: 0012_acl
Revises: 0011_system_blocked_nodes
Create Date: 2026-11-24 01:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012_acl"
down_revision: str | None = "0011_system_blocked_nodes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "acl_policies",
        sa.Column(
            "name", sa.Text(), nullable=False, comment="Policy name ('anonymous' applies to requests without a token)."
        ),
        sa.Column(
            "description", sa.Text(), server_default=sa.text("''"), nullable=False, comment="Free text shown to operators."
        ),
        sa.Column("rules", sa.Text(), nullable=False, comment="The policy as written (HCL or JSON), returned verbatim."),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index", sa.BigInteger(), nullable=False, comment="State index of the last write to the row (X-Nomad-Index)."
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_acl_policies")),
        comment="ACL policies in Nomad's policy language; tokens name them.",
    )
    op.create_table(
        "acl_tokens",
        sa.Column("accessor_id", sa.UUID(), nullable=False, comment="Public token ID (AccessorID)."),
        sa.Column(
            "secret_hash", sa.Text(), nullable=False, comment="Hex SHA-256 of the SecretID; the secret itself is never stored."
        ),
        sa.Column("name", sa.Text(), server_default=sa.text("''"), nullable=False, comment="Free-text name."),
        sa.Column(
            "type", sa.Text(), nullable=False, comment="client (its policies apply) or management (may do everything)."
        ),
        sa.Column(
            "policies",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'::text[]"),
            nullable=False,
            comment="Names of the policies a client token carries.",
        ),
        sa.Column(
            "global",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Nomad's Global flag (one region here: informative).",
        ),
        sa.Column(
            "create_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the token was created.",
        ),
        sa.Column(
            "expiration_time",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="After this instant the token is refused; NULL never expires.",
        ),
        sa.Column(
            "expiration_ttl_ns",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="The TTL the expiration was computed from (nanoseconds; 0 none).",
        ),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index", sa.BigInteger(), nullable=False, comment="State index of the last write to the row (X-Nomad-Index)."
        ),
        sa.CheckConstraint("type IN ('client', 'management')", name=op.f("ck_acl_tokens_type")),
        sa.CheckConstraint(
            "type = 'client' OR cardinality(policies) = 0", name=op.f("ck_acl_tokens_management_has_no_policies")
        ),
        sa.PrimaryKeyConstraint("accessor_id", name=op.f("pk_acl_tokens")),
        comment="ACL tokens. Only the SHA-256 of each secret is stored; the secret is shown once, at creation.",
    )
    op.create_index("ix_acl_tokens_secret_hash", "acl_tokens", ["secret_hash"], unique=True)
    op.create_table(
        "acl_bootstrap",
        sa.Column("id", sa.SmallInteger(), nullable=False, comment="Always 1."),
        sa.Column(
            "bootstrap_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last bootstrap; a new one needs this value as its reset index.",
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_acl_bootstrap_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acl_bootstrap")),
        comment="Whether ACLs were bootstrapped: the state index of the bootstrap (Nomad's reset index).",
    )
    op.execute(
        "INSERT INTO state_index (name, value) VALUES ('acl_policies', 1), ('acl_tokens', 1) ON CONFLICT DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name IN ('acl_policies', 'acl_tokens')")
    op.drop_table("acl_bootstrap")
    op.drop_index("ix_acl_tokens_secret_hash", table_name="acl_tokens")
    op.drop_table("acl_tokens")
    op.drop_table("acl_policies")
