"""The leader's drainer (Nomad's drainer), one step of every drain an operator started
(app/store/node/drains.py): load each draining node's allocations into dataclasses, ask
app/leader/drain_rules.py what to do, then mark the chosen allocations for migration with one
node-drain evaluation per job, or complete the drain."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.leader.drain_rules import Candidate, Migration, Replacement, Strategy, next_step
from app.models import Allocation, Node
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.node.drains import SQL_NULL, now_ns
from app.store.sql import query
from app.values.rfc3339 import of_datetime


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
    strategy = Strategy.of(node.drain_strategy)
    candidates = _candidates(session, node_id)
    migrations = _migrations(session, candidates)
    remaining = _remaining(session, node_id, strategy.ignore_system_jobs)
    step = next_step(strategy, candidates, migrations, remaining, now_ns(datetime.now(UTC)))
    if step.complete:
        _complete(session, node, take_index())
        return 1
    if not step.migrate:
        return 0
    index = take_index()
    _mark_migrate(session, [c.alloc_id for c in step.migrate], index)
    _drain_evals(session, step.migrate, node, index)
    return len(step.migrate)


def _candidates(session: Session, node_id: uuid.UUID) -> list[Candidate]:
    rows = session.execute(query("drain_candidates"), {"node_id": node_id}).mappings()
    return [
        Candidate(
            alloc_id=r["id"],
            namespace=r["namespace"],
            job_id=r["job_id"],
            task_group=r["task_group"],
            job_type=r["job_type"],
            priority=int(r["priority"]),
            job_modify_index=int(r["job_modify_index"]),
            max_parallel=int(r["max_parallel"]),
        )
        for r in rows
    ]


def _migrations(session: Session, candidates: list[Candidate]) -> list[Migration]:
    """The migrations of the candidates' jobs, with their replacements."""
    if not candidates:
        return []
    params = {
        "namespaces": sorted({c.namespace for c in candidates}),
        "job_ids": sorted({c.job_id for c in candidates}),
    }
    found: dict[uuid.UUID, Migration] = {}
    for r in session.execute(query("drain_migrations"), params).mappings():
        seen = found.get(r["id"]) or Migration(
            r["namespace"], r["job_id"], r["task_group"], r["job_type"], r["client_status"], r["desired_status"]
        )
        if r["replacement_status"] is not None:
            also = Replacement(r["replacement_status"], r["replacement_healthy"])
            seen = replace(seen, replacements=(*seen.replacements, also))
        found[r["id"]] = seen
    return list(found.values())


def _remaining(session: Session, node_id: uuid.UUID, ignore_system: bool) -> int:
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


def _drain_evals(session: Session, chosen: Sequence[Candidate], node: Node, index: int) -> None:
    jobs = {(c.namespace, c.job_id): c for c in chosen}
    for (namespace, job_id), c in sorted(jobs.items()):
        request = EvalRequest(
            namespace=namespace,
            job_id=job_id,
            job_type=c.job_type,
            priority=c.priority,
            triggered_by="node-drain",
            job_modify_index=c.job_modify_index,
            node_id=node.id,
            node_modify_index=node.modify_index,
        )
        insert_eval(session, request, index)


def _complete(session: Session, node: Node, index: int) -> None:
    now = datetime.now(UTC)
    node.drain_strategy = SQL_NULL
    node.last_drain = {**(node.last_drain or {}), "Status": "complete", "UpdatedAt": of_datetime(now)}
    node.modify_index, node.updated_at = index, now
