"""Allocation status reported by clients, in batches (Nomad's Node.UpdateAlloc): client status,
task states and description. An allocation turning terminal frees capacity; a failure asks the
scheduler to reschedule (alloc-failure); an `unknown` allocation reported again is a reconnect."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Evaluation, JobVersion, Node
from app.scheduler.reschedule import attempts_left_after, failed_tracker
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.evaluation.evals import insert_node_eval
from app.store.node.nodes import get_node
from app.structs import Job as JobStruct
from app.structs import ReschedulePolicy
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import Conflict, Forbidden, NotFound
from app.values.ids import secret_matches
from app.wire.allocation import AllocDeploymentStatusJson, TaskStateJson

# What a client may report; lost and unknown are the servers' verdicts.
CLIENT_REPORTABLE = ("pending", "running", "complete", "failed")
# Nomad's batchedFailedAllocWindowSize: failures due within 5 s of each other share one evaluation.
RESCHEDULE_BATCH_NS = 5_000_000_000


@dataclass(frozen=True)
class AllocUpdate:
    id: uuid.UUID
    client_status: str
    client_description: str = ""
    task_states: dict[str, TaskStateJson] = field(default_factory=dict)
    destroyed: bool = False
    # The client's verdict on the allocation's health in this deployment, if it reached one.
    health: DeploymentHealth | None = None


@dataclass(frozen=True)
class DeploymentHealth:
    deployment_id: uuid.UUID | None  # None: judged by the group's migrate block, outside any deployment
    healthy: bool


@dataclass(frozen=True)
class UpdateResult:
    index: int
    eval_ids: list[uuid.UUID]
    updated: int


class NodeCredentials(NamedTuple):
    """What a client request needs of its node: who it is, its secret and its standing."""

    id: uuid.UUID
    secret_hash: str
    status: str
    computed_class: str


def authenticate(session: Session, node_id: uuid.UUID, secret: str) -> NodeCredentials:
    """The node, checked against the request's secret. Four columns, not the ORM row: every
    status batch of every node asks this, and loading the whole node (attributes, resources,
    drivers as JSON) was a third of what a batch cost the API in a placement storm."""
    row = session.execute(
        select(Node.id, Node.secret_hash, Node.status, Node.computed_class).where(Node.id == node_id)
    ).one_or_none()
    if row is None:
        raise NotFound.of("NodeID", f"node {node_id} not found")
    node = NodeCredentials(row[0], row[1], row[2], row[3])
    if not secret_matches(secret, node.secret_hash):
        raise Forbidden.of("X-Nomad-Token", "is not the secret of this node")
    return node


# Nomad's Node.UpdateAlloc refuses these: a node must heartbeat (and so become initializing)
# before it reports allocations. Otherwise a returning client's report could reach the
# scheduler while its node still counts as lost, and its allocations would be marked lost
# right as they came back.
UNRESPONSIVE_STATUSES = ("down", "disconnected")


def update_allocations(session: Session, node_id: uuid.UUID, secret: str, updates: list[AllocUpdate]) -> UpdateResult:
    node = authenticate(session, node_id, secret)
    if node.status in UNRESPONSIVE_STATUSES:
        raise Conflict.of("NodeID", f"node {node_id} is {node.status}: it must heartbeat before reporting allocations")
    index = next_index(session, ["allocations", "evaluations"])
    rows = _locked(session, [u.id for u in updates])
    now = datetime.now(UTC)
    freed, updated = False, 0
    failed: dict[tuple[str, str], list[Allocation]] = {}
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
            failed.setdefault(key, []).append(alloc)
        if before == "unknown" and not terminal:
            reconnected.add(key)
    session.flush()
    if freed:
        unblock_capacity(session, {node.id: node.computed_class}, index)
    if not failed and not reconnected:
        return UpdateResult(index, [], updated)
    whole = get_node(session, node_id)  # the evaluations record the node's modify index
    eval_ids = _reschedule_evals(session, failed, whole, index, now)
    eval_ids += [e.id for e in _evals(session, reconnected, "reconnect", whole, index)]
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
    changed = update.client_status != before or update.task_states != alloc.task_states
    alloc.client_status = update.client_status
    alloc.client_description = update.client_description
    alloc.task_states = update.task_states
    alloc.modify_index = index
    if changed:  # a report that only says "destroyed" must not make the allocation young for GC
        alloc.modify_time = now
    if update.destroyed and alloc.client_gc_time is None:
        alloc.client_gc_time = now
    _record_health(alloc, update.health, index, now)
    return before


def _record_health(alloc: Allocation, health: DeploymentHealth | None, index: int, now: datetime) -> None:
    """Health counts for the deployment the allocation is in now (or for none, when it is in
    none), and only once: a verdict for an older deployment (before an in-place update moved it)
    or a second verdict is ignored."""
    if health is None or alloc.deployment_id != health.deployment_id:
        return
    status: AllocDeploymentStatusJson = {**(alloc.deployment_status or {})}
    if status.get("Healthy") is not None:
        return
    status["Healthy"], status["Timestamp"], status["ModifyIndex"] = health.healthy, now.isoformat(), index
    alloc.deployment_status = status
    alloc.modify_time = now


def _reschedulable(alloc: Allocation) -> bool:
    """Nomad asks for a reschedule only for work the servers still want and that no delayed
    evaluation already covers."""
    return alloc.desired_status == "run" and alloc.followup_eval_id is None


def _reschedule_evals(
    session: Session, failed: dict[tuple[str, str], list[Allocation]], node: Node, index: int, now: datetime
) -> list[uuid.UUID]:
    """Choose each failed allocation's reschedule delay under its group's policy, record it in
    its tracker, and create one delayed alloc-failure evaluation per job and 5 s window of due
    times (Nomad batches them the same way); each allocation points at its evaluation."""
    now_ns = int(now.timestamp() * 1e9)
    created = []
    for key, allocs in sorted(failed.items()):
        due = []
        for alloc in allocs:
            policy = _policy(session, alloc)
            if policy is None or not attempts_left_after(policy, alloc.reschedule_tracker, now_ns):
                continue
            alloc.reschedule_tracker = failed_tracker(policy, alloc.reschedule_tracker, now_ns)
            due.append((int(alloc.reschedule_tracker["NextRescheduleTime"]), alloc))
        for window in _windows(sorted(due, key=lambda d: (d[0], str(d[1].id)))):
            evaluation = next(iter(_evals(session, {key}, "alloc-failure", node, index)), None)
            if evaluation is None:
                break  # the job is gone
            last = window[-1][0]
            if last > now_ns:
                evaluation.wait_until = datetime.fromtimestamp(last / 1e9, UTC)
            session.flush()
            for _, alloc in window:
                alloc.followup_eval_id = evaluation.id
            created.append(evaluation.id)
    return created


def _windows(due: list[tuple[int, Allocation]]) -> list[list[tuple[int, Allocation]]]:
    windows: list[list[tuple[int, Allocation]]] = []
    for item in due:
        if windows and item[0] - windows[-1][0][0] <= RESCHEDULE_BATCH_NS:
            windows[-1].append(item)
        else:
            windows.append([item])
    return windows


def _policy(session: Session, alloc: Allocation) -> ReschedulePolicy | None:
    version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
    if version is None:
        return None
    group = JobStruct.from_spec(version.spec).group(alloc.task_group)
    return None if group is None else group.reschedule


def _evals(session: Session, jobs: set[tuple[str, str]], trigger: str, node: Node, index: int) -> list[Evaluation]:
    created = (insert_node_eval(session, namespace, job_id, trigger, node, index) for namespace, job_id in sorted(jobs))
    return [e for e in created if e is not None]
