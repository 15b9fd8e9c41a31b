"""A task's state as Nomad's TaskState sends it: the times are RFC 3339 strings (Go's time.Time,
UTC with nanoseconds), the zero time standing for "never". The client reports this form and the
servers store and serve it as it is, so every reader (API clients, the CLI, the UI) sees
Nomad's JSON. Events keep Nomad's integer nanoseconds (TaskEvent.Time is an int64)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

NANOS = 1_000_000_000
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time: the task has not started, finished, restarted
TIMES = ("LastRestart", "StartedAt", "FinishedAt")


def rfc3339(ns: int) -> str:
    """Go's RFC3339Nano form of a Unix time in nanoseconds (trailing zeros of the fraction kept:
    any RFC 3339 reader accepts them)."""
    seconds, fraction = divmod(ns, NANOS)
    whole = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{fraction:09d}Z"


def now() -> str:
    return rfc3339(time.time_ns())


def seconds(text: str | None) -> float:
    """Unix seconds of an RFC 3339 time; 0 for the zero time or none."""
    if not text or text == ZERO_TIME:
        return 0.0
    return datetime.fromisoformat(text).timestamp()


def started(state: dict[str, Any]) -> bool:
    return seconds(state.get("StartedAt")) > 0


def new_state() -> dict[str, Any]:
    return {
        "State": "pending",
        "Failed": False,
        "Restarts": 0,
        "LastRestart": ZERO_TIME,
        "StartedAt": ZERO_TIME,
        "FinishedAt": ZERO_TIME,
        "Events": [],
    }


def upgraded(saved: dict[str, Any]) -> dict[str, Any]:
    """A state saved by an older client (integer nanoseconds or null times) in today's form."""
    state = {**new_state(), **saved}
    for key in TIMES:
        value = state[key]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            state[key] = rfc3339(value)
        elif not isinstance(value, str):
            state[key] = ZERO_TIME
    return state
