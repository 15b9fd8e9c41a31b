"""Forced client-side GC (`system gc`): the hook by which the servers ask clients to destroy
every terminal allocation. A client compares the node's gc_force_index, which its heartbeat
answer carries, with the last one it served."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Node
from app.store.node.nodes import get_node


@dataclass(frozen=True)
class ClientGcResult:
    index: int
    nodes: int


def request_client_gc(session: Session, node_id: uuid.UUID) -> ClientGcResult:
    """Ask one node's client to run a forced GC. Takes its own index; a caller that already
    took one (the lead's `PUT /v1/system/gc`, for every node) uses mark_client_gc instead."""
    get_node(session, node_id)  # 404 before any write
    index = next_index(session, ["nodes"])
    return ClientGcResult(index, mark_client_gc(session, index, node_id))


def mark_client_gc(session: Session, index: int, node_id: uuid.UUID | None = None) -> int:
    """Within the caller's transaction: stamp the nodes; returns how many were asked."""
    stmt = update(Node).values(gc_force_index=index, modify_index=index).where(Node.status != "down")
    if node_id is not None:
        stmt = stmt.where(Node.id == node_id)
    return int(session.execute(stmt).rowcount)  # type: ignore[attr-defined]
