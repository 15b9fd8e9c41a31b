"""Disconnected nodes (group `disconnect { lost_after, replace, reconcile }`) once their window
ends: what is still `unknown` becomes lost, and a disconnected node nothing waits for any more
goes down. How a node becomes disconnected is in app/leader/heartbeat_expiry.py; a client that
returns in time reports its allocations again (a `reconnect` evaluation)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.models import Allocation, Node
from app.store.evaluation.evals import insert_node_eval
from app.store.node.node_status import apply_node_status
from app.store.node.nodes import NODE_ROW_LOCK
from app.store.sql import query

EXPIRY_BATCH = 1000
LOST_DESCRIPTION = "alloc is lost since its node stayed disconnected past disconnect.lost_after"
SETTLED_DESCRIPTION = "node stayed disconnected past every allocation's disconnect window"


def expire_unknown(session: Session, take_index: Callable[[], int]) -> int:
    """Leader duty: allocations unknown past their window are lost; their jobs re-evaluated."""
    rows = session.execute(query("expired_unknown"), {"batch": EXPIRY_BATCH}).all()
    if not rows:
        return 0
    index = take_index()
    session.execute(
        update(Allocation)
        .where(Allocation.id.in_([r.id for r in rows]))
        .values(client_status="lost", client_description=LOST_DESCRIPTION, modify_index=index, alloc_modify_index=index)
    )
    for namespace, job_id, node_id in sorted({(r.namespace, r.job_id, r.node_id) for r in rows}):
        node = session.get(Node, node_id)
        if node is not None:
            insert_node_eval(session, namespace, job_id, "max-disconnect-timeout", node, index)
    return len(rows)


def settle_disconnected(session: Session, take_index: Callable[[], int]) -> int:
    """Leader duty: a disconnected node nothing waits for any more (its unknown allocations are
    lost, stopped or replaced) becomes down, with the node-update evaluations that implies."""
    ids = session.scalars(query("disconnected_settled"), {"batch": EXPIRY_BATCH}).all()
    if not ids:
        return 0
    index = take_index()
    for node_id in ids:
        node = session.get(Node, node_id, with_for_update=NODE_ROW_LOCK, populate_existing=True)
        if node is not None and node.status == "disconnected":  # not reconnected meanwhile
            apply_node_status(session, node, "down", SETTLED_DESCRIPTION, index)
    return len(ids)
