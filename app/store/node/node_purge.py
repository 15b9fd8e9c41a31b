"""Purging a node (Nomad's Node.Deregister, `POST /v1/node/:id/purge`): the node is gone for the
scheduler at once, its jobs get a node-update evaluation each, and the scheduler marks its
allocations lost and replaces them, as for a node that went down.

Nomad deletes the node from its state there and then. Here allocations keep a foreign key to
their node (their history names it), so a node that ever ran something is set down and
ineligible instead, and node GC deletes it once garbage collection has taken its allocations;
a node that never ran anything is deleted in the same transaction."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import delete, exists, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Node
from app.store.node.node_status import apply_node_status
from app.store.node.nodes import create_node_evals, get_node

PURGED = "node purged"


@dataclass(frozen=True)
class PurgeResult:
    eval_ids: list[uuid.UUID]
    deleted: bool  # False: kept down until its allocations are collected
    index: int


def purge_node(session: Session, node_id: uuid.UUID) -> PurgeResult:
    index = next_index(session, ["nodes", "evaluations"])
    node = get_node(session, node_id, deleting=True)
    was_down = node.status == "down"
    node.scheduling_eligibility = "ineligible"
    evals = apply_node_status(session, node, "down", PURGED, index)
    if was_down:  # no status change to evaluate for; Nomad evaluates the node's jobs regardless
        node.status_description, node.modify_index = PURGED, index
        evals = create_node_evals(session, node, index)
    session.flush()
    referenced = session.scalar(select(exists().where(Allocation.node_id == node.id)))
    if not referenced:
        session.execute(delete(Node).where(Node.id == node.id))
        session.expunge(node)
    return PurgeResult(evals, not referenced, index)
