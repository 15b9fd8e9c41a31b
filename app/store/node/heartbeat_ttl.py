"""The heartbeat TTL a node is granted, by Nomad's formula, recorded in node_heartbeats."""

from __future__ import annotations

import uuid
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


def grant(
    session: Session, node_id: uuid.UUID, secret: str, policy: HeartbeatPolicy, *, async_commit: bool = False
) -> Beat | None:
    """Authenticate and record a heartbeat in one statement; None for an unknown node or a wrong
    secret. `async_commit`: the same statement turns synchronous_commit off for the transaction
    (only for a transaction that writes nothing else)."""
    params: dict[str, object] = {
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
