"""Whether and when a failed allocation may be replaced, under its group's reschedule policy
(Nomad's NextDelay / NextRescheduleTime).

The servers decide the delay when the client reports the failure (app/store/client_allocs.py)
and write it into the failed allocation's tracker as NextRescheduleTime and NextDelay, next to
the history; a delayed `alloc-failure` evaluation waits until then. The reconciler replaces the
allocation only once that time has come, and the replacement's history records the delay used,
from which the next delay grows (exponential, fibonacci)."""

from __future__ import annotations

from app.structs import Allocation, ReschedulePolicy
from app.wire.allocation import RescheduleEventJson, RescheduleTrackerJson

# Nomad's rescheduleWindowSize: due within this much counts as due now.
WINDOW_NS = 1_000_000_000


def tracker_events(tracker: RescheduleTrackerJson | None) -> list[RescheduleEventJson]:
    return list((tracker or {}).get("Events") or [])


def events(alloc: Allocation) -> list[RescheduleEventJson]:
    return tracker_events(alloc.reschedule_tracker)


def attempts_left_after(policy: ReschedulePolicy | None, tracker: RescheduleTrackerJson | None, now_ns: int) -> bool:
    """Unlimited, or fewer than Attempts reschedules within the trailing Interval."""
    if policy is None:
        return False
    if policy.unlimited:
        return True
    recent = [e for e in tracker_events(tracker) if now_ns - e.get("RescheduleTime", 0) < policy.interval_ns]
    return len(recent) < policy.attempts


def attempts_left(policy: ReschedulePolicy | None, alloc: Allocation, now_ns: int) -> bool:
    return attempts_left_after(policy, alloc.reschedule_tracker, now_ns)


def next_delay(policy: ReschedulePolicy, tracker: RescheduleTrackerJson | None, failed_at_ns: int) -> int:
    """The delay before the next reschedule: constant, doubling, or the sum of the last two;
    capped at MaxDelay, and back to Delay once the capped delay has passed since the last one."""
    history = tracker_events(tracker)
    delay = policy.delay_ns
    last = [e.get("Delay", 0) for e in history[-2:]]
    if policy.delay_function == "exponential" and last:
        delay = max(policy.delay_ns, last[-1] * 2)
    elif policy.delay_function == "fibonacci" and len(last) == 2:
        restarted = last[0] == policy.max_delay_ns and last[1] == policy.delay_ns
        delay = last[1] if restarted else last[0] + last[1]
    if policy.max_delay_ns > 0 and delay > policy.max_delay_ns:
        delay = policy.max_delay_ns
        if history and failed_at_ns - history[-1].get("RescheduleTime", 0) > delay:
            delay = policy.delay_ns
    return delay


def delay_ns(alloc: Allocation) -> int:
    """The delay the servers chose when the failure was reported (0 if none was recorded)."""
    return (alloc.reschedule_tracker or {}).get("NextDelay", 0)


def due(alloc: Allocation, now_ns: int) -> bool:
    """Whether the failed allocation's delay has passed (Nomad's one-second window included)."""
    at = (alloc.reschedule_tracker or {}).get("NextRescheduleTime")
    return at is None or at - now_ns <= WINDOW_NS


def failed_tracker(
    policy: ReschedulePolicy, tracker: RescheduleTrackerJson | None, failed_at_ns: int
) -> RescheduleTrackerJson:
    """The failed allocation's tracker once the servers have chosen its delay."""
    delay = next_delay(policy, tracker, failed_at_ns)
    return {
        **(tracker or {}),
        "Events": tracker_events(tracker),
        "NextDelay": delay,
        "NextRescheduleTime": failed_at_ns + delay,
    }


def next_tracker(alloc: Allocation, now_ns: int) -> RescheduleTrackerJson:
    """The replacement's tracker: the old events plus this reschedule, with the delay it waited."""
    event: RescheduleEventJson = {
        "RescheduleTime": now_ns,
        "PrevAllocID": str(alloc.id),
        "PrevNodeID": str(alloc.node_id),
        "Delay": delay_ns(alloc),
    }
    return {"Events": [*events(alloc), event]}
