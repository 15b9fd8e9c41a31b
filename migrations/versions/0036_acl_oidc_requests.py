"""acl_oidc_requests: the OIDC logins under way between auth-url and complete-auth

PUT /v1/acl/oidc/auth-url starts a login: it picks the `state` the provider hands back and,
with PKCE, the code verifier the token exchange must present. PUT /v1/acl/oidc/complete-auth
may reach any API server, so the request is kept here (Nomad keeps it in the leader's memory,
keyed by the client nonce, for six minutes) and used up by the first completion.

Revision ID: 0036_acl_oidc_requests
Revises: 0035_volume_claims
Create Date: 2026-11-29 13:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0036_acl_oidc_requests"
down_revision: str | None = "0035_volume_claims"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = postgresql.TIMESTAMP(timezone=True)


def upgrade() -> None:
    op.create_table(
        "acl_oidc_requests",
        sa.Column(
            "client_nonce",
            sa.Text(),
            nullable=False,
            comment="The ClientNonce the login command chose; the ID token must carry it as its nonce.",
        ),
        sa.Column("auth_method", sa.Text(), nullable=False, comment="The OIDC auth method the login goes through."),
        sa.Column("state", sa.Text(), nullable=False, comment="The OAuth state sent to the provider; the callback must return it."),
        sa.Column(
            "redirect_uri", sa.Text(), nullable=False, comment="Where the provider sends the browser back (the login's callback)."
        ),
        sa.Column(
            "code_verifier",
            sa.Text(),
            nullable=True,
            comment="The PKCE code verifier the token exchange presents (methods with OIDCEnablePKCE); else null.",
        ),
        sa.Column("expires_at", TIMESTAMP, nullable=False, comment="After this instant complete-auth refuses the request."),
        sa.ForeignKeyConstraint(
            ["auth_method"],
            ["acl_auth_methods.name"],
            name=op.f("fk_acl_oidc_requests_auth_method"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("client_nonce", name=op.f("pk_acl_oidc_requests")),
        comment="OIDC logins started by /v1/acl/oidc/auth-url, used up by /v1/acl/oidc/complete-auth.",
    )
    op.create_index(op.f("ix_acl_oidc_requests_auth_method"), "acl_oidc_requests", ["auth_method"])
    op.create_index(op.f("ix_acl_oidc_requests_expires_at"), "acl_oidc_requests", ["expires_at"])


def downgrade() -> None:
    op.drop_table("acl_oidc_requests")
