"""Nomad's JSON of a variable: VariableMetadata (the list stub), VariableDecrypted (metadata
and Items) and VariableLock, whose TTL and LockDelay are Go duration strings."""

from __future__ import annotations

from typing import Any

from app.store.variables import HeldLock, Meta, Value
from app.variables.rules import go_duration


def lock(held: HeldLock) -> dict[str, Any]:
    return {"ID": held.id, "TTL": go_duration(held.ttl_ns), "LockDelay": go_duration(held.delay_ns)}


def meta(found: Meta, *, show_lock: bool) -> dict[str, Any]:
    """`show_lock`: the lock is shown to its holder and to management tokens only."""
    body: dict[str, Any] = {"Namespace": found.namespace, "Path": found.path}
    if found.lock is not None and show_lock:
        body["Lock"] = lock(found.lock)
    body |= {
        "CreateIndex": found.create_index,
        "CreateTime": found.create_time_ns,
        "ModifyIndex": found.modify_index,
        "ModifyTime": found.modify_time_ns,
    }
    return body


def value(found: Value, *, show_lock: bool, empty_lock: bool = False) -> dict[str, Any]:
    body = meta(found.meta, show_lock=show_lock)
    if empty_lock:  # Nomad's failed release: an empty lock, nothing else of the variable
        body = {
            "Namespace": found.meta.namespace,
            "Path": found.meta.path,
            "Lock": {"ID": "", "TTL": "", "LockDelay": ""},
        } | {k: v for k, v in body.items() if k not in ("Namespace", "Path")}
    return body | {"Items": found.items}
