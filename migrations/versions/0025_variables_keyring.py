"""variables, keyring_keys: Nomad Variables sealed at rest, and the keyring that seals them

Each data key (Nomad's root key) is stored sealed with a root key kept outside the database
(CORRAL_KEYRING_KEY_FILE, app/keyring/root_key.py): a reader of the database sees only
ciphertext. A variable's items are sealed with the active data key, bound to its namespace and
path. 'variables' and 'keyring_keys' join the state index names so their reads block and report
X-Nomad-Index like every other table.

Revision ID: 0025_variables_keyring
Revises: 0024_reserved_cores
Create Date: 2026-11-29 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025_variables_keyring"
down_revision: str | None = "0024_reserved_cores"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CREATE_INDEX = "State index of the write that created the row."
MODIFY_INDEX = "State index of the last write to the row (X-Nomad-Index)."


def upgrade() -> None:
    op.create_table(
        "keyring_keys",
        sa.Column("key_id", sa.UUID(), nullable=False, comment="KeyID (the JWT 'kid' of its signing key)."),
        sa.Column(
            "state",
            sa.Text(),
            nullable=False,
            comment="active (encrypts new writes, signs new identities; one at most) or inactive (decrypts, verifies).",
        ),
        sa.Column(
            "algorithm",
            sa.Text(),
            server_default=sa.text("'aes256-gcm'"),
            nullable=False,
            comment="Nomad's Algorithm of the data key: aes256-gcm.",
        ),
        sa.Column(
            "sealed_data_key",
            sa.LargeBinary(),
            nullable=False,
            comment="The AES-256 data key, sealed (AES-256-GCM) with the root key; nonce first.",
        ),
        sa.Column(
            "sealed_signing_key",
            sa.LargeBinary(),
            nullable=False,
            comment="The RSA private key (PKCS#8 DER) that signs identities, sealed with the root key.",
        ),
        sa.Column(
            "public_key",
            sa.LargeBinary(),
            nullable=False,
            comment="The RSA public key (SubjectPublicKeyInfo DER), published at /.well-known/jwks.json.",
        ),
        sa.Column(
            "create_time_ns", sa.BigInteger(), nullable=False, comment="Nomad's CreateTime: Unix nanoseconds of the creation."
        ),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment=CREATE_INDEX),
        sa.Column("modify_index", sa.BigInteger(), nullable=False, comment=MODIFY_INDEX),
        sa.CheckConstraint("state IN ('active', 'inactive')", name=op.f("ck_keyring_keys_state")),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_keyring_keys")),
        comment="The keyring's data keys (Nomad's root keys). Their secret parts are sealed with the root key, which "
        "is never stored in the database: a reader of this table alone decrypts nothing.",
    )
    op.create_index(
        "uq_keyring_keys_active", "keyring_keys", ["state"], unique=True, postgresql_where=sa.text("state = 'active'")
    )
    op.create_table(
        "variables",
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the variable."),
        sa.Column("path", sa.Text(), nullable=False, comment="Path of the variable, e.g. nomad/jobs/web."),
        sa.Column("key_id", sa.UUID(), nullable=False, comment="The data key that sealed the items (Nomad's KeyID)."),
        sa.Column(
            "sealed_items",
            sa.LargeBinary(),
            nullable=False,
            comment="The items (a JSON string map), sealed with the data key; nonce first.",
        ),
        sa.Column("lock_id", sa.Text(), nullable=True, comment="The lock holder's Lock.ID; NULL: not a held lock."),
        sa.Column(
            "lock_ttl_ns", sa.BigInteger(), server_default=sa.text("0"), nullable=False, comment="Lock.TTL in nanoseconds."
        ),
        sa.Column(
            "lock_delay_ns",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Lock.LockDelay in nanoseconds.",
        ),
        sa.Column(
            "lock_expires_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="When the lock's TTL runs out unless renewed; it is free again LockDelay after that.",
        ),
        sa.Column(
            "create_time_ns", sa.BigInteger(), nullable=False, comment="Nomad's CreateTime: Unix nanoseconds of the creation."
        ),
        sa.Column(
            "modify_time_ns",
            sa.BigInteger(),
            nullable=False,
            comment="Nomad's ModifyTime: Unix nanoseconds of the last write.",
        ),
        sa.Column("create_index", sa.BigInteger(), nullable=False, comment=CREATE_INDEX),
        sa.Column("modify_index", sa.BigInteger(), nullable=False, comment=MODIFY_INDEX),
        sa.CheckConstraint("(lock_id IS NULL) = (lock_expires_at IS NULL)", name=op.f("ck_variables_lock_complete")),
        sa.ForeignKeyConstraint(["key_id"], ["keyring_keys.key_id"], name=op.f("fk_variables_key_id")),
        sa.PrimaryKeyConstraint("namespace", "path", name=op.f("pk_variables")),
        comment="Nomad Variables. Items are sealed with a keyring data key (AES-256-GCM, bound to the namespace and "
        "path); the metadata and lock are plain.",
    )
    op.create_index("ix_variables_key_id", "variables", ["key_id"])
    op.execute(
        "INSERT INTO state_index (name, value) VALUES ('variables', 1), ('keyring_keys', 1) ON CONFLICT DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DELETE FROM state_index WHERE name IN ('variables', 'keyring_keys')")
    op.drop_index("ix_variables_key_id", table_name="variables")
    op.drop_table("variables")
    op.drop_index("uq_keyring_keys_active", table_name="keyring_keys")
    op.drop_table("keyring_keys")
