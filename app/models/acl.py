"""ACL policies and tokens (Nomad's ACLPolicy and ACLToken), and the bootstrap record."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, Index, SmallInteger, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column

TOKEN_TYPES = ("client", "management")


class AclPolicy(Base):
    __tablename__ = "acl_policies"
    __table_args__ = {"comment": "ACL policies in Nomad's policy language; tokens name them."}

    name: Mapped[str] = mapped_column(
        primary_key=True, comment="Policy name ('anonymous' applies to requests without a token)."
    )
    description: Mapped[str] = mapped_column(server_default=text("''"), comment="Free text shown to operators.")
    rules: Mapped[str] = mapped_column(comment="The policy as written (HCL or JSON), returned verbatim.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclToken(Base):
    __tablename__ = "acl_tokens"
    __table_args__ = (
        CheckConstraint("type IN ('client', 'management')", name="type"),
        CheckConstraint("type = 'client' OR cardinality(policies) = 0", name="management_has_no_policies"),
        CheckConstraint("type = 'client' OR cardinality(roles) = 0", name="management_has_no_roles"),
        Index("ix_acl_tokens_secret_hash", "secret_hash", unique=True),
        {"comment": "ACL tokens. Only the SHA-256 of each secret is stored; the secret is shown once, at creation."},
    )

    accessor_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Public token ID (AccessorID).")
    secret_hash: Mapped[str] = mapped_column(comment="Hex SHA-256 of the SecretID; the secret itself is never stored.")
    name: Mapped[str] = mapped_column(server_default=text("''"), comment="Free-text name.")
    type: Mapped[str] = mapped_column(comment="client (its policies apply) or management (may do everything).")
    policies: Mapped[list[str]] = mapped_column(
        server_default=text("'{}'::text[]"), comment="Names of the policies a client token carries."
    )
    roles: Mapped[list[uuid.UUID]] = mapped_column(
        server_default=text("'{}'::uuid[]"),
        comment="IDs of the ACL roles a client token links; IDs of deleted roles are ignored.",
    )
    global_: Mapped[bool] = mapped_column(
        "global", server_default=text("false"), comment="Nomad's Global flag (one region here: informative)."
    )
    create_time: Mapped[datetime] = mapped_column(server_default=text("now()"), comment="When the token was created.")
    expiration_time: Mapped[datetime | None] = mapped_column(
        comment="After this instant the token is refused; NULL never expires."
    )
    expiration_ttl_ns: Mapped[int] = mapped_column(
        server_default=text("0"), comment="The TTL the expiration was computed from (nanoseconds; 0 none)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclRole(Base):
    __tablename__ = "acl_roles"
    __table_args__ = (
        CheckConstraint("cardinality(policies) > 0", name="has_policies"),
        UniqueConstraint("name"),
        {"comment": "ACL roles: named sets of policies that client tokens link by ID (Nomad's ACLRole)."},
    )

    id: Mapped[uuid.UUID] = mapped_column(
        primary_key=True, comment="The role's ID (Nomad's ACLRole.ID), chosen by the server."
    )
    name: Mapped[str] = mapped_column(comment="Unique role name: 1-128 letters, digits and '-'.")
    description: Mapped[str] = mapped_column(server_default=text("''"), comment="Free text shown to operators.")
    policies: Mapped[list[str]] = mapped_column(
        comment="Names of the ACL policies the role grants (each existed when the role was written)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class AclBootstrap(Base):
    __tablename__ = "acl_bootstrap"
    __table_args__ = (
        CheckConstraint("id = 1", name="single_row"),
        {"comment": "Whether ACLs were bootstrapped: the state index of the bootstrap (Nomad's reset index)."},
    )

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, comment="Always 1.")
    bootstrap_index: Mapped[int] = mapped_column(
        comment="State index of the last bootstrap; a new one needs this value as its reset index."
    )
