"""What becomes of a node whose heartbeat expired, pure: `down`, or `disconnected` while it
runs allocations whose group allows a disconnect window (`disconnect.lost_after`, or the older
`max_client_disconnect`). Those allocations become `unknown`, and each of their jobs gets a
`max-disconnect-timeout` evaluation due when its longest window ends. The I/O step is
app/leader/heartbeat_expiry.py."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

MISSED = "node heartbeat missed its TTL"
WAITING = MISSED + "; allocations wait out their disconnect window"


@dataclass(frozen=True)
class Window:
    """A live allocation on the node whose group allows a disconnect window."""

    alloc_id: uuid.UUID
    namespace: str
    job_id: str
    lost_after_ns: int


@dataclass(frozen=True)
class Timeout:
    """A max-disconnect-timeout evaluation for one job, due at `wait_until`."""

    namespace: str
    job_id: str
    wait_until: datetime


@dataclass(frozen=True)
class Silence:
    status: str
    description: str
    unknown: tuple[uuid.UUID, ...] = ()
    timeouts: tuple[Timeout, ...] = ()


def went_silent(windows: Sequence[Window], now: datetime) -> Silence:
    if not windows:
        return Silence("down", MISSED)
    longest: dict[tuple[str, str], int] = {}
    for w in windows:
        key = (w.namespace, w.job_id)
        longest[key] = max(longest.get(key, 0), w.lost_after_ns)
    timeouts = tuple(
        Timeout(namespace, job_id, now + timedelta(microseconds=lost_after / 1000))
        for (namespace, job_id), lost_after in sorted(longest.items())
    )
    return Silence("disconnected", WAITING, tuple(w.alloc_id for w in windows), timeouts)
