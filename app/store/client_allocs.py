"""Allocation status reported by clients, in batches (Nomad's Node.UpdateAlloc): client status,
task states and description. An allocation turning terminal frees capacity; a failure asks the
scheduler to reschedule (alloc-failure); an `unknown` allocation reported again is a reconnect."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.errors import Forbidden
from app.ids import secret_hash
from app.models import Allocation, Job, Node
from app.store.broker import unblock_capacity
from app.store.evals import EvalRequest, insert_eval
from app.store.index import next_index
from app.store.nodes import get_node

# What a client may report; lost and unknown are the servers' verdicts.
CLIENT_REPORTABLE = ("pending", "running", "complete", "failed")


@dataclass(frozen=True)
class AllocUpdate:
    id: uuid.UUID
    client_status: str
    client_description: str = ""
    task_states: dict[str, Any] = field(default_factory=dict)
    destroyed: bool = False


@dataclass(frozen=True)
class UpdateResult:
    index: int
    eval_ids: list[uuid.UUID]
    updated: int


def authenticate(session: Session, node_id: uuid.UUID, secret: str) -> Node:
    node = get_node(session, node_id)
    if secret_hash(secret) != node.secret_hash:
        raise Forbidden.of("X-Nomad-Token", "is not the secret of this node")
    return node


def update_allocations(session: Session, node_id: uuid.UUID, secret: str, updates: list[AllocUpdate]) -> UpdateResult:
    node = authenticate(session, node_id, secret)
    index = next_index(session, ["allocations", "evaluations"])
    rows = _locked(session, [u.id for u in updates])
    now = datetime.now(UTC)
    freed, updated = False, 0
    failed: set[tuple[str, str]] = set()
    reconnected: set[tuple[str, str]] = set()
    for position, update in enumerate(updates):
        alloc = rows.get(update.id)
        if alloc is None:
            continue  # garbage-collected on the server meanwhile: nothing left to update
        if alloc.node_id != node_id:
            raise Forbidden.of(f"Allocs[{position}].ID", f"allocation {alloc.id} is not on node {node_id}")
        before = _apply(alloc, update, index, now)
        if before is None:
            continue
        updated += 1
        key = (alloc.namespace, alloc.job_id)
        terminal = alloc.client_status in ALLOC_CLIENT_TERMINAL_STATUSES
        freed |= terminal and before not in ALLOC_CLIENT_TERMINAL_STATUSES and alloc.desired_status == "run"
        if alloc.client_status == "failed" and before != "failed" and _reschedulable(alloc):
            failed.add(key)
        if before == "unknown" and not terminal:
            reconnected.add(key)
    session.flush()
    if freed:
        unblock_capacity(session, [node.computed_class], index)
    eval_ids = _evals(session, failed, "alloc-failure", node, index)
    eval_ids += _evals(session, reconnected, "reconnect", node, index)
    return UpdateResult(index, eval_ids, updated)


def _locked(session: Session, ids: list[uuid.UUID]) -> dict[uuid.UUID, Allocation]:
    """One lock order (by id), so two batches touching the same allocations cannot deadlock."""
    stmt = select(Allocation).where(Allocation.id.in_(sorted(set(ids)))).order_by(Allocation.id).with_for_update()
    return {a.id: a for a in session.scalars(stmt)}


def _apply(alloc: Allocation, update: AllocUpdate, index: int, now: datetime) -> str | None:
    """Write the client's view; returns the previous client status, or None when ignored: a
    client cannot bring back an allocation that is already terminal (lost, or finished)."""
    before = alloc.client_status
    if before in ALLOC_CLIENT_TERMINAL_STATUSES and update.client_status != before:
        return None
    alloc.client_status = update.client_status
    alloc.client_description = update.client_description
    alloc.task_states = update.task_states
    alloc.modify_index, alloc.modify_time = index, now
    if update.destroyed and alloc.client_gc_time is None:
        alloc.client_gc_time = now
    return before


def _reschedulable(alloc: Allocation) -> bool:
    """Nomad asks for a reschedule only for work the servers still want and that no delayed
    evaluation already covers."""
    return alloc.desired_status == "run" and alloc.followup_eval_id is None


def _evals(session: Session, jobs: set[tuple[str, str]], trigger: str, node: Node, index: int) -> list[uuid.UUID]:
    created = []
    for namespace, job_id in sorted(jobs):
        job = session.get(Job, (namespace, job_id))
        if job is None or job.purged_at is not None:
            continue
        request = EvalRequest(
            namespace=namespace,
            job_id=job_id,
            job_type=job.type,
            priority=job.priority,
            triggered_by=trigger,
            job_modify_index=job.job_modify_index,
            node_id=node.id,
            node_modify_index=node.modify_index,
        )
        created.append(insert_eval(session, request, index).id)
    return created
