"""ACL auth methods, their binding rules (Nomad's ACLAuthMethod and ACLBindingRule) and the
one-time tokens of the web UI's login flow (Nomad's OneTimeToken)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, LargeBinary, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column
from app.wire.json import JsonObject


class AclAuthMethod(Base):
    __tablename__ = "acl_auth_methods"
    __table_args__ = (
        CheckConstraint("type IN ('JWT', 'OIDC')", name="type"),
        CheckConstraint("token_locality IN ('local', 'global')", name="token_locality"),
        # Nomad allows one default method per type (the CLI's `login` without -method uses it).
        Index("ix_acl_auth_methods_default_type", "type", unique=True, postgresql_where=text("is_default")),
        {"comment": "ACL auth methods: how /v1/acl/login verifies an external identity (Nomad's ACLAuthMethod)."},
    )

    name: Mapped[str] = mapped_column(primary_key=True, comment="Unique name: 1-128 letters, digits and '-'.")
    type: Mapped[str] = mapped_column(comment="JWT or OIDC.")
    token_locality: Mapped[str] = mapped_column(comment="local or global: the Global flag of the tokens it makes.")
    token_name_format: Mapped[str] = mapped_column(
        comment="Name of the tokens it makes, with ${auth_method_type}, ${auth_method_name}, ${value.x}."
    )
    max_token_ttl_ns: Mapped[int] = mapped_column(comment="ExpirationTTL of the tokens it makes (nanoseconds).")
    is_default: Mapped[bool] = mapped_column(comment="The default method of its type (Nomad's Default).")
    config: Mapped[JsonObject] = mapped_column(
        JSONB, comment="Nomad's ACLAuthMethodConfig as given (keys, issuers, audiences, claim mappings)."
    )
    create_time: Mapped[datetime] = mapped_column(comment="When the method was created.")
    modify_time: Mapped[datetime] = mapped_column(comment="When the method was last written.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclBindingRule(Base):
    __tablename__ = "acl_binding_rules"
    __table_args__ = (
        CheckConstraint("bind_type IN ('role', 'policy', 'management')", name="bind_type"),
        {"comment": "ACL binding rules: which roles/policies a login through an auth method gets (ACLBindingRule)."},
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="The rule's ID, chosen by the server.")
    description: Mapped[str] = mapped_column(server_default=text("''"), comment="Free text shown to operators.")
    auth_method: Mapped[str] = mapped_column(
        ForeignKey("acl_auth_methods.name", ondelete="CASCADE"),
        index=True,
        comment="The auth method the rule applies to; deleting the method deletes its rules.",
    )
    selector: Mapped[str] = mapped_column(
        server_default=text("''"), comment="go-bexpr over the mapped claims (value.x, list.x); empty matches all."
    )
    bind_type: Mapped[str] = mapped_column(comment="role, policy or management.")
    bind_name: Mapped[str] = mapped_column(
        server_default=text("''"), comment="Role or policy name, with ${value.x} interpolation; empty for management."
    )
    create_time: Mapped[datetime] = mapped_column(comment="When the rule was created.")
    modify_time: Mapped[datetime] = mapped_column(comment="When the rule was last written.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclOneTimeToken(Base):
    __tablename__ = "acl_one_time_tokens"
    __table_args__ = (
        {"comment": "One-time secrets that stand for an ACL token until exchanged once (Nomad's OneTimeToken)."},
    )

    secret_hash: Mapped[str] = mapped_column(
        primary_key=True, comment="Hex SHA-256 of the OneTimeSecretID; the secret itself is never stored."
    )
    accessor_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("acl_tokens.accessor_id", ondelete="CASCADE"),
        index=True,
        comment="The token the exchange hands over; deleting the token deletes its one-time secrets.",
    )
    sealed_secret: Mapped[bytes] = mapped_column(
        LargeBinary,
        comment="The token's SecretID, AES-GCM sealed with a key derived from the one-time secret: "
        "only the holder of that secret can open it (the token's own secret is stored nowhere else).",
    )
    expires_at: Mapped[datetime] = mapped_column(comment="After this instant the secret is refused.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclOidcRequest(Base):
    __tablename__ = "acl_oidc_requests"
    __table_args__ = (
        {"comment": "OIDC logins started by /v1/acl/oidc/auth-url, used up by /v1/acl/oidc/complete-auth."},
    )

    client_nonce: Mapped[str] = mapped_column(
        primary_key=True, comment="The ClientNonce the login command chose; the ID token must carry it as its nonce."
    )
    auth_method: Mapped[str] = mapped_column(
        ForeignKey("acl_auth_methods.name", ondelete="CASCADE"),
        index=True,
        comment="The OIDC auth method the login goes through.",
    )
    state: Mapped[str] = mapped_column(comment="The OAuth state sent to the provider; the callback must return it.")
    redirect_uri: Mapped[str] = mapped_column(
        comment="Where the provider sends the browser back (the login's callback)."
    )
    code_verifier: Mapped[str | None] = mapped_column(
        comment="The PKCE code verifier the token exchange presents (methods with OIDCEnablePKCE); else null."
    )
    expires_at: Mapped[datetime] = mapped_column(
        index=True, comment="After this instant complete-auth refuses the request."
    )
