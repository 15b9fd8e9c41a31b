"""Disconnected nodes (group `disconnect { lost_after, replace, reconcile }`): a node that stops
heartbeating while it runs allocations allowed a disconnect window becomes `disconnected`, not
`down`; those allocations become `unknown` (the scheduler replaces them if allowed), and a
`max-disconnect-timeout` evaluation waits for the window's end, when what is still unknown
becomes lost. A client that returns in time reports them again (a `reconnect` evaluation)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.models import Allocation, Node
from app.store.evals import insert_node_eval
from app.store.node_status import apply_node_status
from app.store.sql import query

EXPIRY_BATCH = 1000
LOST_DESCRIPTION = "alloc is lost since its node stayed disconnected past disconnect.lost_after"
SETTLED_DESCRIPTION = "node stayed disconnected past every allocation's disconnect window"


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


def expire_unknown(session: Session, take_index: Callable[[], int]) -> int:
    """Leader duty: allocations unknown past their window are lost; their jobs re-evaluated."""
    rows = session.execute(query("expired_unknown"), {"batch": EXPIRY_BATCH}).all()
    if not rows:
        return 0
    index = take_index()
    session.execute(
        update(Allocation)
        .where(Allocation.id.in_([r.id for r in rows]))
        .values(client_status="lost", client_description=LOST_DESCRIPTION, modify_index=index)
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
        node = session.get(Node, node_id, with_for_update=True, populate_existing=True)
        if node is not None and node.status == "disconnected":  # not reconnected meanwhile
            apply_node_status(session, node, "down", SETTLED_DESCRIPTION, index)
    return len(ids)
