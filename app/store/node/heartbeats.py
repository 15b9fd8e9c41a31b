"""Client heartbeats: granting TTLs (Nomad's formula) into the UNLOGGED node_heartbeats table,
and the node status change a heartbeat implies. The leader's expiry is in
app/leader/heartbeat_expiry.py."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session, sessionmaker

from app.store.node.heartbeat_ttl import Beat, FleetSize, HeartbeatPolicy, grant
from app.store.node.node_status import set_node_status
from app.store.node.nodes import get_node
from app.values.errors import Forbidden


def record(
    session: Session, node_id: uuid.UUID, secret: str, policy: HeartbeatPolicy, fleet: FleetSize | None = None
) -> Beat:
    """Record a heartbeat in one statement (and, every few seconds, one count of the fleet when
    `fleet` is given). Losing one on a crash costs nothing (the leader grants the failover
    TTL), so it does not wait for the WAL flush: the statement turns synchronous_commit off for
    its transaction (sql/queries/heartbeats.sql)."""
    size = None if fleet is None else fleet.current(session)
    beat = grant(session, node_id, secret, policy, async_commit=True, fleet_size=size)
    if beat is None:
        get_node(session, node_id)  # 404 for an unknown node, else the secret was wrong
        raise Forbidden.of("X-Nomad-Token", "is not the secret of this node")
    return beat


def heartbeat(
    sessions: sessionmaker[Session],
    node_id: uuid.UUID,
    secret: str,
    policy: HeartbeatPolicy,
    wanted: str | None,
    fleet: FleetSize | None = None,
) -> Beat:
    """A heartbeat and the status change it implies: a node that was down or disconnected
    comes back as initializing, and becomes ready once the client says it has re-sent its
    allocations' state (Nomad's rule). The status change is a logged write of its own."""
    with sessions() as session:
        # Its one statement is its whole transaction: run autocommitted, it costs one round trip
        # where BEGIN and COMMIT would add two (and the API's CPU for each).
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        beat = record(session, node_id, secret, policy, fleet)
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
