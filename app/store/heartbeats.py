"""Client heartbeats: granting TTLs (Nomad's formula) into the UNLOGGED node_heartbeats table,
and the leader duty that marks nodes whose TTL and grace have passed as down."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from app.db.state_index import next_index
from app.errors import Forbidden
from app.leader import disconnect
from app.models import Node
from app.store.heartbeat_ttl import Beat, HeartbeatPolicy, grant
from app.store.node_status import STATUS_TABLES, apply_node_status, set_node_status
from app.store.nodes import get_node
from app.store.sql import query

EXPIRY_BATCH = 500
MISSED = "node heartbeat missed its TTL"


def record(session: Session, node_id: uuid.UUID, secret: str, policy: HeartbeatPolicy) -> Beat:
    """Record a heartbeat in one statement. Losing one on a crash costs nothing (the leader
    grants the failover TTL), so it does not wait for the WAL flush."""
    session.execute(text("SET LOCAL synchronous_commit = off"))
    beat = grant(session, node_id, secret, policy)
    if beat is None:
        get_node(session, node_id)  # 404 for an unknown node, else the secret was wrong
        raise Forbidden.of("X-Nomad-Token", "is not the secret of this node")
    return beat


def heartbeat(
    sessions: sessionmaker[Session], node_id: uuid.UUID, secret: str, policy: HeartbeatPolicy, wanted: str | None
) -> Beat:
    """A heartbeat and the status change it implies: a node that was down or disconnected
    comes back as initializing, and becomes ready once the client says it has re-sent its
    allocations' state (Nomad's rule). The status change is a logged write of its own."""
    with sessions() as session, session.begin():
        beat = record(session, node_id, secret, policy)
    target = _next_status(beat.status, wanted)
    if target is None:
        return beat
    with sessions() as session, session.begin():
        set_node_status(session, node_id, target, f"node heartbeat ({beat.status} -> {target})")
        node = get_node(session, node_id)
        return Beat(node.status, beat.ttl, node.modify_index, node.gc_force_index)


def _next_status(current: str, wanted: str | None) -> str | None:
    if current in ("down", "disconnected"):
        return "initializing"
    if current == "initializing" and wanted == "ready":
        return "ready"
    return None


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
