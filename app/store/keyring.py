"""The keyring's data keys (Nomad's root keys) in the database, sealed with the root key.

One key is active: it seals new variables and signs new identities. Rotation makes a new key
active and the old one inactive; inactive keys still open what they sealed and verify what they
signed. The first key is made by the first write that needs one. Opened keys are cached per
process: a key's material never changes once written."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import delete, exists, select, update
from sqlalchemy.orm import Session

from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.keyring.crypto import SealError, new_key, open_sealed, seal
from app.models import Allocation, KeyringKey, Variable
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import Conflict, Failed, InvalidInput, NotFound

ACTIVE, INACTIVE = "active", "inactive"
RSA_BITS = 2048


@dataclass(frozen=True)
class DataKey:
    key_id: uuid.UUID
    aes: bytes
    signing: rsa.RSAPrivateKey


@dataclass(frozen=True)
class PublicKey:
    key_id: uuid.UUID
    public: rsa.RSAPublicKey
    create_time_ns: int


_cache: dict[tuple[bytes, uuid.UUID], DataKey] = {}
_cache_lock = threading.Lock()


def _root_id(root: bytes) -> bytes:
    return hashlib.sha256(root).digest()


def _associated(kind: str, key_id: uuid.UUID) -> bytes:
    return f"corral-keyring:{kind}:{key_id}".encode()


def _opened(root: bytes, row: KeyringKey) -> DataKey:
    cached = _cache.get((_root_id(root), row.key_id))
    if cached is not None:
        return cached
    try:
        aes = open_sealed(root, row.sealed_data_key, _associated("data", row.key_id))
        der = open_sealed(root, row.sealed_signing_key, _associated("signing", row.key_id))
    except SealError:
        raise Failed.of(
            "keyring",
            f"key {row.key_id} does not open with this server's root key (CORRAL_KEYRING_KEY_FILE): "
            "every server must use the same root key",
        ) from None
    signing = serialization.load_der_private_key(der, password=None)
    if not isinstance(signing, rsa.RSAPrivateKey):
        raise Failed.of("keyring", f"key {row.key_id}: the signing key is not an RSA key")
    key = DataKey(row.key_id, aes, signing)
    with _cache_lock:
        _cache[(_root_id(root), row.key_id)] = key
    return key


def data_key(session: Session, root: bytes, key_id: uuid.UUID) -> DataKey:
    """The key `key_id` opened (it sealed a stored variable, so it exists)."""
    cached = _cache.get((_root_id(root), key_id))
    if cached is not None:
        return cached
    row = session.get(KeyringKey, key_id)
    if row is None:
        raise Failed.of("keyring", f"key {key_id} is not in the keyring")
    return _opened(root, row)


def active_key(session: Session, root: bytes) -> DataKey:
    """The active key, made now if the keyring is empty (inside a write transaction)."""
    row = session.scalar(select(KeyringKey).where(KeyringKey.state == ACTIVE))
    if row is None:
        lock_object(session, ObjectKind.KEYRING, "")
        row = session.scalar(select(KeyringKey).where(KeyringKey.state == ACTIVE))
        if row is None:
            row = _make_key(session, root)
    return _opened(root, row)


def _make_key(session: Session, root: bytes) -> KeyringKey:
    """A new active key; the caller holds the keyring lock and has retired the previous one."""
    key_id = uuid.uuid4()
    signing = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    der = signing.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = signing.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    index = next_index(session, ["keyring_keys"])
    row = KeyringKey(
        key_id=key_id,
        state=ACTIVE,
        algorithm="aes256-gcm",
        sealed_data_key=seal(root, new_key(), _associated("data", key_id)),
        sealed_signing_key=seal(root, der, _associated("signing", key_id)),
        public_key=public,
        create_time_ns=time.time_ns(),
        create_index=index,
        modify_index=index,
    )
    session.add(row)
    session.flush()
    return row


def rotate(session: Session, root: bytes) -> KeyringKey:
    """Retire the active key and make a new one active."""
    lock_object(session, ObjectKind.KEYRING, "")
    index = next_index(session, ["keyring_keys"])
    session.execute(update(KeyringKey).where(KeyringKey.state == ACTIVE).values(state=INACTIVE, modify_index=index))
    session.flush()
    return _make_key(session, root)


def list_keys(session: Session) -> list[KeyringKey]:
    return list(session.scalars(select(KeyringKey).order_by(KeyringKey.create_index, KeyringKey.key_id)))


def public_keys(session: Session) -> list[PublicKey]:
    """Every key's public half (identities signed by an inactive key still verify)."""
    found = []
    for row in list_keys(session):
        public = serialization.load_der_public_key(row.public_key)
        if isinstance(public, rsa.RSAPublicKey):
            found.append(PublicKey(row.key_id, public, row.create_time_ns))
    return found


def public_key(session: Session, key_id: uuid.UUID) -> rsa.RSAPublicKey | None:
    """The public half of key `key_id`, or None when the keyring has no such key."""
    row = session.get(KeyringKey, key_id)
    if row is None:
        return None
    public = serialization.load_der_public_key(row.public_key)
    return public if isinstance(public, rsa.RSAPublicKey) else None


def remove(session: Session, key_id: uuid.UUID, force: bool = False) -> int:
    """Delete an inactive key (Nomad's Keyring.Delete); the new index. The active key is
    refused (rotate first). A key in use is refused unless `force`, as in Nomad: in use means
    an allocation still running that was placed before the key was retired (it may hold
    workload identities the key signed, which stop verifying; corral records no signing key
    per allocation, so this errs on the side of refusing). A key variables are sealed with is
    refused even with `force`: Nomad's would leave them unreadable, and corral keeps no
    variable it cannot open, so `operator root keyring rotate -full` re-seals them first."""
    lock_object(session, ObjectKind.KEYRING, "")
    row = session.get(KeyringKey, key_id)
    if row is None:
        raise NotFound.of("KeyID", "root key not found")
    if row.state == ACTIVE:
        raise InvalidInput.of("KeyID", "active root key cannot be deleted - call rotate first")
    if session.scalar(select(exists().where(Variable.key_id == key_id))):
        raise Conflict.of(
            "KeyID",
            "root key in use, cannot delete: variables are sealed with it "
            "(`operator root keyring rotate -full` re-seals them with the active key)",
        )
    running = exists().where(
        Allocation.create_index < row.modify_index, Allocation.client_status.not_in(ALLOC_CLIENT_TERMINAL_STATUSES)
    )
    if not force and session.scalar(select(running)):
        raise Conflict.of(
            "KeyID",
            "root key in use, cannot delete: allocations placed before it was retired still run and may hold "
            "workload identities it signed (force=true removes it anyway)",
        )
    index = next_index(session, ["keyring_keys"])
    session.execute(delete(KeyringKey).where(KeyringKey.key_id == key_id))
    with _cache_lock:
        for cached in [k for k in _cache if k[1] == key_id]:
            del _cache[cached]
    return index
