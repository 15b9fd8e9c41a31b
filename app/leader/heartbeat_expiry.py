"""The leader's heartbeat expiry: nodes whose TTL and grace have passed go down, or
disconnected when they run allocations allowed a disconnect window."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader import disconnect
from app.models import Node
from app.store.node_status import STATUS_TABLES, apply_node_status
from app.store.sql import query

EXPIRY_BATCH = 500
MISSED = "node heartbeat missed its TTL"


def expire(
    session: Session, failover_ttl_s: float, take_index: Callable[[], int] | None = None, batch: int = EXPIRY_BATCH
) -> int:
    """Mark nodes whose heartbeat deadline passed as down (node-update evaluations and all),
    then grant the failover TTL to live nodes with no heartbeat row. Idle ticks write nothing
    logged, so they wake no blocking query."""
    expired = [row.node_id for row in session.execute(query("expired_heartbeats"), {"batch": batch})]
    if expired:
        index = take_index() if take_index is not None else next_index(session, STATUS_TABLES)
        for node_id in expired:
            node = session.get(Node, node_id, with_for_update=True)
            if node is not None:
                _went_silent(session, node, index)
            session.execute(query("forget_heartbeat"), {"node_id": node_id})
    session.execute(query("grant_failover_heartbeats"), {"ttl_s": failover_ttl_s})
    return len(expired)


def _went_silent(session: Session, node: Node, index: int) -> None:
    """Disconnected if the node runs allocations allowed a disconnect window, else down."""
    found = disconnect.windows(session, node.id)
    if not found:
        apply_node_status(session, node, "down", MISSED, index)
        return
    apply_node_status(session, node, "disconnected", MISSED + "; allocations wait out their disconnect window", index)
    disconnect.mark_unknown(session, node, found, index)
