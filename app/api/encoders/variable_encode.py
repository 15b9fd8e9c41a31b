"""Nomad's JSON of a variable: VariableMetadata (the list stub), VariableDecrypted (metadata
and Items) and VariableLock, whose TTL and LockDelay are Go duration strings."""

from __future__ import annotations

from app.store.variables import HeldLock, Meta, Value
from app.variables.rules import go_duration
from app.wire.api.api_variables import VariableJson, VariableLockJson, VariableMetaJson

EMPTY_LOCK: VariableLockJson = {"ID": "", "TTL": "", "LockDelay": ""}


def lock(held: HeldLock) -> VariableLockJson:
    return {"ID": held.id, "TTL": go_duration(held.ttl_ns), "LockDelay": go_duration(held.delay_ns)}


def meta(found: Meta, *, show_lock: bool, empty_lock: bool = False) -> VariableMetaJson:
    """`show_lock`: the lock is shown to its holder and to management tokens only.
    `empty_lock`: an empty Lock when none is shown (Nomad's failed release)."""
    shown = lock(found.lock) if found.lock is not None and show_lock else EMPTY_LOCK.copy() if empty_lock else None
    if shown is None:
        return {
            "Namespace": found.namespace,
            "Path": found.path,
            "CreateIndex": found.create_index,
            "CreateTime": found.create_time_ns,
            "ModifyIndex": found.modify_index,
            "ModifyTime": found.modify_time_ns,
        }
    return {
        "Namespace": found.namespace,
        "Path": found.path,
        "Lock": shown,
        "CreateIndex": found.create_index,
        "CreateTime": found.create_time_ns,
        "ModifyIndex": found.modify_index,
        "ModifyTime": found.modify_time_ns,
    }


def value(found: Value, *, show_lock: bool, empty_lock: bool = False) -> VariableJson:
    """Nomad's failed release (`empty_lock`) answers an empty lock, nothing else of the variable."""
    body = meta(found.meta, show_lock=show_lock, empty_lock=empty_lock)
    return {**body, "Items": found.items}
