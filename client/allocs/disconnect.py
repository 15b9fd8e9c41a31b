"""Nomad's heartbeat stop: a group's `disconnect { stop_on_client_after }` (formerly
`stop_after_client_disconnect`) has its client stop the allocation's tasks once the servers
have not answered a heartbeat for that long, so a partitioned node does not keep running work
the servers have already replaced."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NANOS = 1_000_000_000


def stop_after_s(alloc: Mapping[str, Any]) -> float | None:
    """The group's stop-after-disconnect delay in seconds; None when it has none."""
    job = alloc.get("Job") or {}
    group = next((g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), None)
    if not isinstance(group, Mapping):
        return None
    value = (group.get("Disconnect") or {}).get("StopOnClientAfter")
    if value is None:
        value = group.get("StopAfterClientDisconnect")
    return None if value is None else max(0.0, float(value) / NANOS)


def due(alloc: Mapping[str, Any], last_contact: float | None, now: float) -> bool:
    """Whether the allocation must be stopped: the last heartbeat the servers answered is
    older than its delay (never before a first successful one, as Nomad's zero lastOk)."""
    delay = stop_after_s(alloc)
    return delay is not None and last_contact is not None and now > last_contact + delay
