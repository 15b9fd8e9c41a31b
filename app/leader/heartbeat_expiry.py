"""The leader's heartbeat expiry: nodes whose TTL and grace have passed go down, or become
`disconnected` when they run allocations allowed a disconnect window (group `disconnect
{ lost_after }`): those allocations become `unknown` (the scheduler replaces them if allowed),
and a `max-disconnect-timeout` evaluation waits for the window's end (app/leader/disconnect.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader.silence_rules import Window, went_silent
from app.models import Allocation, Node
from app.store.evaluation.evals import insert_node_eval
from app.store.node.node_status import STATUS_TABLES, apply_node_status
from app.store.node.nodes import NODE_ROW_LOCK
from app.store.sql import query

EXPIRY_BATCH = 500


def expire(
    session: Session,
    failover_ttl_s: float,
    take_index: Callable[[], int] | None = None,
    batch: int = EXPIRY_BATCH,
    *,
    grant: bool = True,
) -> int:
    """Mark nodes whose heartbeat deadline passed as down (node-update evaluations and all),
    then (unless `grant` is off: the caller grants last) grant the failover TTL to live nodes
    with no heartbeat row. Idle ticks write nothing logged, so they wake no blocking query."""
    # Locked in id order, as every other writer that locks several nodes does: no lock cycles.
    expired = sorted(row.node_id for row in session.execute(query("expired_heartbeats"), {"batch": batch}))
    if expired:
        index = take_index() if take_index is not None else next_index(session, STATUS_TABLES)
        for node_id in expired:
            node = session.get(Node, node_id, with_for_update=NODE_ROW_LOCK)
            if node is not None:
                _went_silent(session, node, index)
            session.execute(query("forget_heartbeat"), {"node_id": node_id})
    if grant:
        grant_failover(session, failover_ttl_s)
    return len(expired)


def grant_failover(session: Session, failover_ttl_s: float) -> None:
    """Give every live node without a heartbeat row the failover TTL. After a crash the UNLOGGED
    heartbeat table is empty, so this writes. No index: no blocking query watches heartbeats."""
    session.execute(query("grant_failover_heartbeats"), {"ttl_s": failover_ttl_s})


def _went_silent(session: Session, node: Node, index: int) -> None:
    now = datetime.now(UTC)
    silence = went_silent(windows(session, node.id), now)
    apply_node_status(session, node, silence.status, silence.description, index)
    if silence.unknown:
        session.execute(
            update(Allocation)
            .where(Allocation.id.in_(silence.unknown))
            # The servers' verdict, not the client's report: alloc_modify_index moves with it, so
            # the node's client watch (woken by the servers' changes only) hears of it.
            .values(client_status="unknown", modify_index=index, alloc_modify_index=index, modify_time=now)
        )
    for timeout in silence.timeouts:
        evaluation = insert_node_eval(session, timeout.namespace, timeout.job_id, "max-disconnect-timeout", node, index)
        if evaluation is not None:
            evaluation.wait_until = timeout.wait_until


def windows(session: Session, node_id: uuid.UUID) -> list[Window]:
    rows = session.execute(query("disconnect_windows"), {"node_id": node_id}).all()
    return [Window(r.id, r.namespace, r.job_id, int(r.lost_after_ns)) for r in rows]
