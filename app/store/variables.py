"""Nomad Variables: sealed items, check-and-set, and locks (nomad/state/state_store_variables.go).

Every write takes the variable's object lock first, so two writers of one path (even of one
that does not exist yet) run one after the other. Items are sealed with the keyring's active
key, bound to the namespace and path; only this module opens them.

A lock is held from its acquisition until LockDelay after its TTL ran out unrenewed (Nomad's
leader releases it then); renewing is possible until the TTL runs out. Times are this server's
clock, as Nomad's are its leader's."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.keyring.crypto import SealError, open_sealed, seal
from app.models import Variable
from app.store import keyring
from app.values.errors import Conflict, Failed, NotFound
from app.variables.rules import LockSpec

VAR_NOT_FOUND = "variable doesn't exist"
LOCK_NOT_FOUND = "variable doesn't hold a lock"
VAR_IS_LOCKED = "attempting to modify locked variable"


@dataclass(frozen=True)
class HeldLock:
    id: str
    ttl_ns: int
    delay_ns: int
    expires_at: datetime


@dataclass(frozen=True)
class Meta:
    """Nomad's VariableMetadata."""

    namespace: str
    path: str
    lock: HeldLock | None = None
    create_index: int = 0
    create_time_ns: int = 0
    modify_index: int = 0
    modify_time_ns: int = 0


@dataclass(frozen=True)
class Value:
    """Nomad's VariableDecrypted; items None: not shown (a zero-valued conflict, a release)."""

    meta: Meta
    items: dict[str, str] | None


@dataclass(frozen=True)
class Outcome:
    """A write's result: what was written (None for a delete), or the conflicting variable."""

    index: int
    written: Value | None = None
    conflict: Value | None = None
    # A lock conflict shows no data, only an empty lock (Nomad's failed release).
    conflict_lock: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


def _held(row: Variable, now: datetime) -> HeldLock | None:
    if row.lock_id is None or row.lock_expires_at is None:
        return None
    if now >= row.lock_expires_at + timedelta(microseconds=row.lock_delay_ns // 1000):
        return None  # the TTL ran out and so did the delay: Nomad's leader released it
    return HeldLock(row.lock_id, row.lock_ttl_ns, row.lock_delay_ns, row.lock_expires_at)


def meta_of(row: Variable, now: datetime | None = None) -> Meta:
    return Meta(
        row.namespace,
        row.path,
        _held(row, now or _now()),
        row.create_index,
        row.create_time_ns,
        row.modify_index,
        row.modify_time_ns,
    )


def _associated(namespace: str, path: str) -> bytes:
    return f"corral-variable:{namespace}\x00{path}".encode()


def _open(session: Session, root: bytes, row: Variable) -> dict[str, str]:
    key = keyring.data_key(session, root, row.key_id)
    try:
        opened = open_sealed(key.aes, row.sealed_items, _associated(row.namespace, row.path))
    except SealError:
        raise Failed.of("Items", f"variable {row.path!r} does not open: its sealed items were altered") from None
    items: dict[str, str] = json.loads(opened)
    return items


def _value(session: Session, root: bytes, row: Variable) -> Value:
    return Value(meta_of(row), _open(session, root, row))


def _zero(namespace: str, path: str) -> Value:
    return Value(Meta(namespace, path), None)


def _locked(session: Session, namespace: str, path: str) -> Variable | None:
    lock_object(session, ObjectKind.VARIABLE, f"{namespace}:{path}")
    return session.get(Variable, (namespace, path))


def get(session: Session, root: bytes, namespace: str, path: str) -> Value | None:
    row = session.get(Variable, (namespace, path))
    return None if row is None else _value(session, root, row)


def list_metas(session: Session, namespace: str | None, prefix: str) -> list[Meta]:
    """Variables of `namespace` (None: all) whose path starts with `prefix`, in (namespace,
    path) order."""
    query = select(Variable).order_by(Variable.namespace, Variable.path)
    if namespace is not None:
        query = query.where(Variable.namespace == namespace)
    if prefix:
        query = query.where(Variable.path.startswith(prefix, autoescape=True))
    now = _now()
    return [meta_of(row, now) for row in session.scalars(query)]


def _write(
    session: Session, root: bytes, row: Variable | None, namespace: str, path: str, items: Mapping[str, str]
) -> Variable:
    key = keyring.active_key(session, root)
    index = next_index(session, ["variables"])
    now_ns = time.time_ns()
    sealed = seal(key.aes, json.dumps(dict(items), sort_keys=True).encode(), _associated(namespace, path))
    if row is None:
        row = Variable(
            namespace=namespace,
            path=path,
            lock_ttl_ns=0,
            lock_delay_ns=0,
            create_index=index,
            create_time_ns=now_ns,
        )
        session.add(row)
    row.key_id, row.sealed_items = key.key_id, sealed
    row.modify_index, row.modify_time_ns = index, now_ns
    return row


def set_items(
    session: Session, root: bytes, namespace: str, path: str, items: Mapping[str, str], lock_id: str, cas: int | None
) -> Outcome:
    """Nomad's VarOpSet / VarOpCAS. `lock_id`: the Lock.ID the caller presents ('' none)."""
    row = _locked(session, namespace, path)
    if cas is not None:
        if row is None and cas != 0:
            return Outcome(0, conflict=_zero(namespace, path))
        if row is not None and cas != row.modify_index:
            return Outcome(0, conflict=_value(session, root, row))
    if row is not None:
        held = _held(row, _now())
        if held is not None and held.id != lock_id:
            return Outcome(0, conflict=_zero(namespace, path))
        if held is None:
            row.lock_id, row.lock_expires_at = None, None  # a lapsed lock goes with the next write
    written = _write(session, root, row, namespace, path, items)
    session.flush()
    return Outcome(written.modify_index, written=Value(meta_of(written), dict(items)))


def delete(session: Session, root: bytes, namespace: str, path: str, cas: int | None) -> Outcome:
    """Nomad's VarOpDelete / VarOpDeleteCAS."""
    row = _locked(session, namespace, path)
    if cas is not None:
        if row is None:
            return Outcome(0) if cas == 0 else Outcome(0, conflict=_zero(namespace, path))
        if cas != row.modify_index:
            return Outcome(0, conflict=_value(session, root, row))
    if row is None:
        return Outcome(0)
    if _held(row, _now()) is not None:
        return Outcome(0, conflict=_zero(namespace, path))
    index = next_index(session, ["variables"])
    session.delete(row)
    session.flush()
    return Outcome(index)


def acquire_lock(
    session: Session, root: bytes, namespace: str, path: str, items: Mapping[str, str], lock: LockSpec
) -> Outcome:
    """Nomad's VarOpLockAcquire: lock the variable (made if missing) for `lock` (canonical);
    new items replace the old ones, none keep them."""
    row = _locked(session, namespace, path)
    now = _now()
    if row is not None:
        held = _held(row, now)
        if held is not None and held.id != lock.id:
            return Outcome(0, conflict=_zero(namespace, path))
    kept = dict(items) if items or row is None else _open(session, root, row)
    written = _write(session, root, row, namespace, path, kept)
    written.lock_id, written.lock_ttl_ns, written.lock_delay_ns = lock.id, lock.ttl_ns, lock.delay_ns
    written.lock_expires_at = now + timedelta(microseconds=lock.ttl_ns // 1000)
    session.flush()
    return Outcome(written.modify_index, written=Value(meta_of(written, now), kept))


def release_lock(session: Session, namespace: str, path: str, lock_id: str) -> Outcome:
    """Nomad's VarOpLockRelease: the holder gives the lock up; the items stay."""
    row = _locked(session, namespace, path)
    if row is None:
        raise NotFound.of("Path", VAR_NOT_FOUND)
    held = _held(row, _now())
    if held is None:
        raise Conflict.of("Lock", LOCK_NOT_FOUND)
    if held.id != lock_id:
        return Outcome(0, conflict=_zero(namespace, path), conflict_lock=True)
    index = next_index(session, ["variables"])
    row.lock_id, row.lock_expires_at = None, None
    row.modify_index, row.modify_time_ns = index, time.time_ns()
    session.flush()
    return Outcome(index, written=Value(meta_of(row), None))


def renew_lock(session: Session, namespace: str, path: str, lock_id: str) -> Meta:
    """Nomad's RenewLock: the holder restarts its TTL, before it runs out. No state index is
    taken: nothing a reader sees changes but the deadline."""
    row = _locked(session, namespace, path)
    if row is None:
        raise NotFound.of("Path", VAR_NOT_FOUND)
    now = _now()
    held = _held(row, now)
    if held is None:
        raise Conflict.of("Lock", LOCK_NOT_FOUND)
    if held.id != lock_id or now >= held.expires_at:
        raise Conflict.of("Lock", VAR_IS_LOCKED)  # another holder's, or its TTL already ran out
    row.lock_expires_at = now + timedelta(microseconds=held.ttl_ns // 1000)
    session.flush()
    return meta_of(row, now)


def reseal_all(session: Session, root: bytes, batch: int = 500) -> int:
    """Re-seal every variable not sealed with the active key (rotate ?full): returns how many.
    Modify indexes stay: the variables did not change."""
    key = keyring.active_key(session, root)
    count = 0
    while True:
        rows = list(session.scalars(select(Variable).where(Variable.key_id != key.key_id).limit(batch)))
        if not rows:
            return count
        for row in rows:
            items = _open(session, root, row)
            row.sealed_items = seal(
                key.aes, json.dumps(items, sort_keys=True).encode(), _associated(row.namespace, row.path)
            )
            row.key_id = key.key_id
        session.flush()
        count += len(rows)
