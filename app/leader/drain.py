"""Node drain (Nomad's drainer): an operator sets a drain strategy on a node (app/store/drains.py);
the leader then asks its allocations to migrate, at most migrate.max_parallel per job and group
at a time, with one node-drain evaluation per job, system jobs last (or never, if ignored), everything
at once past the deadline; the drain ends when nothing it must move is left."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.models import Allocation, Node
from app.store.drains import SQL_NULL, now_ns
from app.store.evals import EvalRequest, insert_eval
from app.store.sql import query

SYSTEM_TYPES = ("system", "sysbatch")


def advance(session: Session, take_index: Callable[[], int]) -> int:
    """Leader duty: one step of every drain. Returns how many allocations it asked to migrate
    plus drains completed; writes nothing when there is nothing to do."""
    changed = 0
    for (node_id,) in session.execute(query("draining_nodes")).all():
        changed += _advance_node(session, node_id, take_index)
    return changed


def _advance_node(session: Session, node_id: uuid.UUID, take_index: Callable[[], int]) -> int:
    node = session.get(Node, node_id)
    if node is None or node.drain_strategy is None:
        return 0
    strategy = node.drain_strategy
    now = now_ns(datetime.now(UTC))
    forced = 0 < int(strategy.get("ForceDeadline") or 0) <= now
    ignore_system = bool((strategy.get("DrainSpec") or {}).get("IgnoreSystemJobs"))
    candidates = session.execute(query("drain_candidates"), {"node_id": node_id}).mappings().all()
    regular = [c for c in candidates if c["job_type"] not in SYSTEM_TYPES]
    system = [] if ignore_system else [c for c in candidates if c["job_type"] in SYSTEM_TYPES]
    if not regular and not system:
        if _remaining(session, node_id, ignore_system) == 0:
            _complete(session, node, take_index())
            return 1
        return 0
    chosen = list(regular) if forced else _within_max_parallel(session, regular)
    if not regular:
        chosen = list(system)  # system jobs go last, once everything else has moved
    if not chosen:
        return 0
    index = take_index()
    _mark_migrate(session, [c["id"] for c in chosen], index)
    _drain_evals(session, chosen, node, index)
    return len(chosen)


def _within_max_parallel(session: Session, candidates: list[Any]) -> list[Any]:
    in_flight: dict[tuple[str, str, str], int] = defaultdict(int)
    params = {
        "namespaces": sorted({c["namespace"] for c in candidates}),
        "job_ids": sorted({c["job_id"] for c in candidates}),
    }
    for row in session.execute(query("migrations_in_flight"), params):
        in_flight[(row.namespace, row.job_id, row.task_group)] = int(row.in_flight)
    chosen = []
    for candidate in candidates:
        key = (candidate["namespace"], candidate["job_id"], candidate["task_group"])
        if in_flight[key] < max(1, int(candidate["max_parallel"])):
            in_flight[key] += 1
            chosen.append(candidate)
    return chosen


def _remaining(session: Session, node_id: uuid.UUID, ignore_system: bool) -> int:
    """Nomad finishes a drain when the node's allocations are gone, not when their
    replacements are healthy; the replacements' progress only paces the next batch."""
    params = {"node_id": node_id, "ignore_system": ignore_system}
    return int(session.execute(query("drain_remaining"), params).scalar_one())


def _mark_migrate(session: Session, alloc_ids: list[uuid.UUID], index: int) -> None:
    session.execute(
        update(Allocation)
        .where(Allocation.id.in_(alloc_ids))
        .values(
            desired_transition=Allocation.desired_transition.op("||")({"Migrate": True}),
            modify_index=index,
            alloc_modify_index=index,
        )
    )


def _drain_evals(session: Session, chosen: list[Any], node: Node, index: int) -> None:
    jobs = {(c["namespace"], c["job_id"]): c for c in chosen}
    for (namespace, job_id), c in sorted(jobs.items()):
        request = EvalRequest(
            namespace=namespace,
            job_id=job_id,
            job_type=c["job_type"],
            priority=c["priority"],
            triggered_by="node-drain",
            job_modify_index=c["job_modify_index"],
            node_id=node.id,
            node_modify_index=node.modify_index,
        )
        insert_eval(session, request, index)


def _complete(session: Session, node: Node, index: int) -> None:
    now = datetime.now(UTC)
    node.drain_strategy = SQL_NULL
    node.last_drain = {**(node.last_drain or {}), "Status": "complete", "UpdatedAt": now_ns(now)}
    node.modify_index, node.updated_at = index, now
