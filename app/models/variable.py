"""Nomad Variables, sealed at rest, and the keyring whose data keys seal them."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, LargeBinary, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column

KEY_STATES = ("active", "inactive")


class KeyringKey(Base):
    __tablename__ = "keyring_keys"
    __table_args__ = (
        CheckConstraint("state IN ('active', 'inactive')", name="state"),
        Index("uq_keyring_keys_active", "state", unique=True, postgresql_where=text("state = 'active'")),
        {
            "comment": "The keyring's data keys (Nomad's root keys). Their secret parts are sealed with the root "
            "key, which is never stored in the database: a reader of this table alone decrypts nothing."
        },
    )

    key_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="KeyID (the JWT 'kid' of its signing key).")
    state: Mapped[str] = mapped_column(
        comment="active (encrypts new writes, signs new identities; one at most) or inactive (decrypts, verifies)."
    )
    algorithm: Mapped[str] = mapped_column(
        server_default=text("'aes256-gcm'"), comment="Nomad's Algorithm of the data key: aes256-gcm."
    )
    sealed_data_key: Mapped[bytes] = mapped_column(
        LargeBinary, comment="The AES-256 data key, sealed (AES-256-GCM) with the root key; nonce first."
    )
    sealed_signing_key: Mapped[bytes] = mapped_column(
        LargeBinary, comment="The RSA private key (PKCS#8 DER) that signs identities, sealed with the root key."
    )
    public_key: Mapped[bytes] = mapped_column(
        LargeBinary, comment="The RSA public key (SubjectPublicKeyInfo DER), published at /.well-known/jwks.json."
    )
    create_time_ns: Mapped[int] = mapped_column(comment="Nomad's CreateTime: Unix nanoseconds of the creation.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class Variable(Base):
    __tablename__ = "variables"
    __table_args__ = (
        Index("ix_variables_key_id", "key_id"),
        CheckConstraint("(lock_id IS NULL) = (lock_expires_at IS NULL)", name="lock_complete"),
        {
            "comment": "Nomad Variables. Items are sealed with a keyring data key (AES-256-GCM, bound to the "
            "namespace and path); the metadata and lock are plain."
        },
    )

    namespace: Mapped[str] = mapped_column(primary_key=True, comment="Namespace of the variable.")
    path: Mapped[str] = mapped_column(primary_key=True, comment="Path of the variable, e.g. nomad/jobs/web.")
    key_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("keyring_keys.key_id"), comment="The data key that sealed the items (Nomad's KeyID)."
    )
    sealed_items: Mapped[bytes] = mapped_column(
        LargeBinary, comment="The items (a JSON string map), sealed with the data key; nonce first."
    )
    lock_id: Mapped[str | None] = mapped_column(comment="The lock holder's Lock.ID; NULL: not a held lock.")
    lock_ttl_ns: Mapped[int] = mapped_column(server_default=text("0"), comment="Lock.TTL in nanoseconds.")
    lock_delay_ns: Mapped[int] = mapped_column(server_default=text("0"), comment="Lock.LockDelay in nanoseconds.")
    lock_expires_at: Mapped[datetime | None] = mapped_column(
        comment="When the lock's TTL runs out unless renewed; it is free again LockDelay after that."
    )
    create_time_ns: Mapped[int] = mapped_column(comment="Nomad's CreateTime: Unix nanoseconds of the creation.")
    modify_time_ns: Mapped[int] = mapped_column(comment="Nomad's ModifyTime: Unix nanoseconds of the last write.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
