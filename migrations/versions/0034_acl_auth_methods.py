"""acl_auth_methods, acl_binding_rules, acl_one_time_tokens: Nomad's SSO login objects

An auth method says how PUT /v1/acl/login verifies an external identity (a JWT signed by a
static key or a JWKS, its issuer and audiences, which claims to map); its binding rules say
which roles or policies the token minted for a matching identity gets. A one-time token is a
short-lived secret the web UI exchanges once for the ACL token that made it. The two new state
index names let lists of methods and rules block and report X-Nomad-Index like other tables.

Revision ID: 0034_acl_auth_methods
Revises: 0033_host_volumes
Create Date: 2026-11-29 10:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0034_acl_auth_methods"
down_revision: str | None = "0033_host_volumes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = postgresql.TIMESTAMP(timezone=True)


def _indexes() -> list[sa.Column[int]]:
    return [
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment="State index of the write that created the row."),
        sa.Column(
            "modify_index", sa.BigInteger(), nullable=False, comment="State index of the last write to the row (X-Nomad-Index)."
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "acl_auth_methods",
        sa.Column("name", sa.Text(), nullable=False, comment="Unique name: 1-128 letters, digits and '-'."),
        sa.Column("type", sa.Text(), nullable=False, comment="JWT or OIDC."),
        sa.Column(
            "token_locality", sa.Text(), nullable=False, comment="local or global: the Global flag of the tokens it makes."
        ),
        sa.Column(
            "token_name_format",
            sa.Text(),
            nullable=False,
            comment="Name of the tokens it makes, with ${auth_method_type}, ${auth_method_name}, ${value.x}.",
        ),
        sa.Column(
            "max_token_ttl_ns", sa.BigInteger(), nullable=False, comment="ExpirationTTL of the tokens it makes (nanoseconds)."
        ),
        sa.Column("is_default", sa.Boolean(), nullable=False, comment="The default method of its type (Nomad's Default)."),
        sa.Column(
            "config",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="Nomad's ACLAuthMethodConfig as given (keys, issuers, audiences, claim mappings).",
        ),
        sa.Column("create_time", TIMESTAMP, nullable=False, comment="When the method was created."),
        sa.Column("modify_time", TIMESTAMP, nullable=False, comment="When the method was last written."),
        *_indexes(),
        sa.CheckConstraint("type IN ('JWT', 'OIDC')", name=op.f("ck_acl_auth_methods_type")),
        sa.CheckConstraint("token_locality IN ('local', 'global')", name=op.f("ck_acl_auth_methods_token_locality")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_acl_auth_methods")),
        comment="ACL auth methods: how /v1/acl/login verifies an external identity (Nomad's ACLAuthMethod).",
    )
    op.create_index(
        "ix_acl_auth_methods_default_type",
        "acl_auth_methods",
        ["type"],
        unique=True,
        postgresql_where=sa.text("is_default"),
    )
    op.create_table(
        "acl_binding_rules",
        sa.Column("id", sa.UUID(), nullable=False, comment="The rule's ID, chosen by the server."),
        sa.Column(
            "description", sa.Text(), server_default=sa.text("''"), nullable=False, comment="Free text shown to operators."
        ),
        sa.Column(
            "auth_method",
            sa.Text(),
            nullable=False,
            comment="The auth method the rule applies to; deleting the method deletes its rules.",
        ),
        sa.Column(
            "selector",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="go-bexpr over the mapped claims (value.x, list.x); empty matches all.",
        ),
        sa.Column("bind_type", sa.Text(), nullable=False, comment="role, policy or management."),
        sa.Column(
            "bind_name",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Role or policy name, with ${value.x} interpolation; empty for management.",
        ),
        sa.Column("create_time", TIMESTAMP, nullable=False, comment="When the rule was created."),
        sa.Column("modify_time", TIMESTAMP, nullable=False, comment="When the rule was last written."),
        *_indexes(),
        sa.CheckConstraint("bind_type IN ('role', 'policy', 'management')", name=op.f("ck_acl_binding_rules_bind_type")),
        sa.ForeignKeyConstraint(
            ["auth_method"],
            ["acl_auth_methods.name"],
            name=op.f("fk_acl_binding_rules_auth_method"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acl_binding_rules")),
        comment="ACL binding rules: which roles/policies a login through an auth method gets (ACLBindingRule).",
    )
    op.create_index(op.f("ix_acl_binding_rules_auth_method"), "acl_binding_rules", ["auth_method"])
    op.create_table(
        "acl_one_time_tokens",
        sa.Column(
            "secret_hash",
            sa.Text(),
            nullable=False,
            comment="Hex SHA-256 of the OneTimeSecretID; the secret itself is never stored.",
        ),
        sa.Column(
            "accessor_id",
            sa.UUID(),
            nullable=False,
            comment="The token the exchange hands over; deleting the token deletes its one-time secrets.",
        ),
        sa.Column(
            "sealed_secret",
            sa.LargeBinary(),
            nullable=False,
            comment="The token's SecretID, AES-GCM sealed with a key derived from the one-time secret: "
            "only the holder of that secret can open it (the token's own secret is stored nowhere else).",
        ),
        sa.Column("expires_at", TIMESTAMP, nullable=False, comment="After this instant the secret is refused."),
        *_indexes(),
        sa.ForeignKeyConstraint(
            ["accessor_id"],
            ["acl_tokens.accessor_id"],
            name=op.f("fk_acl_one_time_tokens_accessor_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("secret_hash", name=op.f("pk_acl_one_time_tokens")),
        comment="One-time secrets that stand for an ACL token until exchanged once (Nomad's OneTimeToken).",
    )
    op.create_index(op.f("ix_acl_one_time_tokens_accessor_id"), "acl_one_time_tokens", ["accessor_id"])
    op.execute(
        "INSERT INTO state_index (name, value) VALUES ('acl_auth_methods', 1), ('acl_binding_rules', 1) "
        "ON CONFLICT DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name IN ('acl_auth_methods', 'acl_binding_rules')")
    op.drop_table("acl_one_time_tokens")
    op.drop_table("acl_binding_rules")
    op.drop_table("acl_auth_methods")
