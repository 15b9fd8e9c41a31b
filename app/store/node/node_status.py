"""Node status transitions and the evaluations they imply (seed: eval triggers, node-update).
Heartbeat expiry (leader) and client status updates both come through here."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Node
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.node.nodes import create_node_evals, get_node
from app.values.constants import NODE_STATUSES
from app.values.errors import InvalidInput

STATUS_TABLES = ("nodes", "evaluations")


def set_node_status(session: Session, node_id: uuid.UUID, status: str, description: str = "") -> list[uuid.UUID]:
    """Change a node's status in one transaction with its evaluations: going down re-plans the
    work on it; coming (back) up re-plans system jobs and releases evaluations blocked on capacity."""
    if status not in NODE_STATUSES:
        raise InvalidInput.of("Status", f"must be one of {', '.join(NODE_STATUSES)}, got {status!r}")
    index = next_index(session, STATUS_TABLES)
    node = get_node(session, node_id, for_update=True)
    return apply_node_status(session, node, status, description, index)


def apply_node_status(session: Session, node: Node, status: str, description: str, index: int) -> list[uuid.UUID]:
    """set_node_status for a caller that already took the index (and locked the node), so one
    transaction can change many nodes."""
    before = node.status
    if before == status:
        return []
    node.status, node.status_description = status, description
    node.status_updated_at = node.updated_at = datetime.now(UTC)
    node.modify_index = index
    session.flush()
    if status == "down" or (status == "ready" and before != "ready") or "disconnected" in (status, before):
        evals = create_node_evals(session, node, index)
    else:
        evals = []
    if status == "ready":
        unblock_capacity(session, {node.id: node.computed_class}, index)
    return evals
