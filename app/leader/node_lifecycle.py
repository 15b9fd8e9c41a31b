"""The leader's node duty, one tick: heartbeat expiry, disconnect windows (a disconnected node
whose windows are all over goes down), then drain progress, in one transaction that takes its
state index only if something is written (idle ticks wake nobody)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader import disconnect, drain, heartbeat_expiry
from app.settings.config import get_settings

NODE_DUTY_TABLES = ("nodes", "evaluations", "allocations")


class LazyIndex:
    """next_index on first use, then the same index: a tick that changes nothing logs none."""

    def __init__(self, session: Session) -> None:
        self._session, self._index = session, 0

    def __call__(self) -> int:
        if not self._index:
            self._index = next_index(self._session, NODE_DUTY_TABLES)
        return self._index


def node_lifecycle(session: Session) -> int:
    """Leader duty (workers/leader.py)."""
    take_index = LazyIndex(session)
    failover_ttl_s = get_settings().failover_heartbeat_ttl_s
    changed = heartbeat_expiry.expire(session, failover_ttl_s, take_index, grant=False)
    changed += disconnect.expire_unknown(session, take_index)
    changed += disconnect.settle_disconnected(session, take_index)
    changed += drain.advance(session, take_index)
    # Last: after a Postgres crash the heartbeat table is empty and the grant writes.
    heartbeat_expiry.grant_failover(session, failover_ttl_s)
    return changed
