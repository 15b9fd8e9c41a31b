"""The heartbeat TTL a node is granted, by Nomad's formula, recorded in node_heartbeats."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from app.settings.config import Settings
from app.store.sql import query
from app.values.ids import secret_hash


@dataclass(frozen=True)
class HeartbeatPolicy:
    """Nomad's defaults: the fleet sends about 50 heartbeats/s, no TTL below 10 s, 10 s grace."""

    min_ttl_s: float = 10.0
    grace_s: float = 10.0
    per_second: float = 50.0

    @classmethod
    def of(cls, settings: Settings) -> HeartbeatPolicy:
        return cls(settings.heartbeat_min_ttl_s, settings.heartbeat_grace_s, settings.max_heartbeats_per_second)


@dataclass(frozen=True)
class Beat:
    status: str
    ttl: timedelta
    modify_index: int
    force_gc_index: int = 0


FLEET_SIZE_FRESH_S = 5.0


class FleetSize:
    """The number of nodes holding a heartbeat TTL, as one process last counted it: a heartbeat's
    TTL is sized by it, and counting every node's row on every beat cost Postgres 0.8 ms a beat
    at 10,000 nodes. A count at most FLEET_SIZE_FRESH_S old sizes the TTL as well (the TTL is
    then stretched by a random factor up to 2 anyway), as Nomad's leader sizes it by its timers."""

    def __init__(self, fresh_s: float = FLEET_SIZE_FRESH_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._fresh_s = fresh_s
        self._clock = clock
        self._counted: tuple[float, int] | None = None  # (when, count)

    def current(self, session: Session) -> int:
        now = self._clock()
        counted = self._counted
        if counted is not None and now - counted[0] < self._fresh_s:
            return counted[1]
        count = int(session.execute(query("fleet_size")).scalar_one())
        self._counted = (now, count)
        return count


def grant(
    session: Session,
    node_id: uuid.UUID,
    secret: str,
    policy: HeartbeatPolicy,
    *,
    async_commit: bool = False,
    fleet_size: int | None = None,
) -> Beat | None:
    """Authenticate and record a heartbeat in one statement; None for an unknown node or a wrong
    secret. `async_commit`: the same statement turns synchronous_commit off for the transaction
    (only for a transaction that writes nothing else). `fleet_size`: a recent count of the nodes
    holding a TTL (FleetSize); None counts them in the statement."""
    params: dict[str, object] = {
        "fleet_size": fleet_size,
        "async_commit": async_commit,
        "node_id": node_id,
        "secret_hash": secret_hash(secret),
        "min_ttl_s": policy.min_ttl_s,
        "per_second": policy.per_second,
        "grace_s": policy.grace_s,
    }
    row = session.execute(query("heartbeat"), params).first()
    if row is None:
        return None
    return Beat(row.status, timedelta(milliseconds=row.ttl_ms), row.modify_index, row.gc_force_index)
