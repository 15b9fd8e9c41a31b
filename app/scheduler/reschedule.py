"""Whether a failed allocation may be replaced now, under its group's reschedule policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.structs import Allocation, ReschedulePolicy


def events(alloc: Allocation) -> list[Mapping[str, Any]]:
    tracker = alloc.reschedule_tracker or {}
    return list(tracker.get("Events") or [])


def attempts_left(policy: ReschedulePolicy | None, alloc: Allocation, now_ns: int) -> bool:
    """Unlimited, or fewer than Attempts reschedules within the trailing Interval."""
    if policy is None:
        return False
    if policy.unlimited:
        return True
    recent = [e for e in events(alloc) if now_ns - int(e.get("RescheduleTime", 0)) < policy.interval_ns]
    return len(recent) < policy.attempts


def delay_ns(policy: ReschedulePolicy, alloc: Allocation) -> int:
    """Seam for Nomad's reschedule delays (constant/exponential/fibonacci): not applied yet,
    so every eligible failed allocation is replaced at once."""
    return 0


def next_tracker(alloc: Allocation, now_ns: int) -> dict[str, Any]:
    """The replacement's tracker: the old events plus this reschedule."""
    event = {
        "RescheduleTime": now_ns,
        "PrevAllocID": str(alloc.id),
        "PrevNodeID": str(alloc.node_id),
        "Delay": 0,
    }
    return {"Events": [*events(alloc), event]}
