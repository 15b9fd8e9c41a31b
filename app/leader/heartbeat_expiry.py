"""The leader's heartbeat expiry: nodes whose TTL and grace have passed go down, or become
`disconnected` when they run allocations allowed a disconnect window (group `disconnect
{ lost_after }`): those allocations become `unknown` (the scheduler replaces them if allowed),
and a `max-disconnect-timeout` evaluation waits for the window's end (app/leader/disconnect.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Node
from app.store.evals import insert_node_eval
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
    found = windows(session, node.id)
    if not found:
        apply_node_status(session, node, "down", MISSED, index)
        return
    apply_node_status(session, node, "disconnected", MISSED + "; allocations wait out their disconnect window", index)
    mark_unknown(session, node, found, index)


def windows(session: Session, node_id: uuid.UUID) -> list[tuple[uuid.UUID, str, str, int]]:
    rows = session.execute(query("disconnect_windows"), {"node_id": node_id}).all()
    return [(r.id, r.namespace, r.job_id, int(r.lost_after_ns)) for r in rows]


def mark_unknown(
    session: Session, node: Node, found: list[tuple[uuid.UUID, str, str, int]], index: int
) -> list[uuid.UUID]:
    """The node went silent: its allocations with a window become unknown, and each job gets a
    max-disconnect-timeout evaluation due when its window ends."""
    now = datetime.now(UTC)
    session.execute(
        update(Allocation)
        .where(Allocation.id.in_([f[0] for f in found]))
        .values(client_status="unknown", modify_index=index, modify_time=now)
    )
    due: dict[tuple[str, str], int] = {}
    for _, namespace, job_id, lost_after in found:
        due[(namespace, job_id)] = max(due.get((namespace, job_id), 0), lost_after)
    created = []
    for (namespace, job_id), lost_after in sorted(due.items()):
        evaluation = insert_node_eval(session, namespace, job_id, "max-disconnect-timeout", node, index)
        if evaluation is not None:
            evaluation.wait_until = now + timedelta(microseconds=lost_after / 1000)
            created.append(evaluation.id)
    return created
