"""The plan applier's transaction: re-check each node of a plan against current state with the
scheduler's own fit function, commit what fits (partial commit), and answer with a refresh
index for the rest. Runs only on the lock holder's connection, fenced by its term."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import psycopg
import structlog
from psycopg.types.json import Jsonb
from sqlalchemy import RowMapping, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.metrics.timings import PLAN_EVALUATE, PLAN_NODE_REJECTED, timed
from app.models import Allocation as AllocRow
from app.models import Plan as PlanRow
from app.models import PlanResult as PlanResultRow
from app.pipeline.plan_codec import decode_plan, encode_result, ports_to_json
from app.pipeline.snapshot import node_from_row
from app.plan_wire import PlanRowJson
from app.scheduler.fit import add_usage, exhausted_dimension, remove_usage
from app.store import deployments
from app.store.blocked_evals import unblock_capacity
from app.store.evals import EvalRequest, insert_eval
from app.store.sql import query
from app.structs import Allocation, AllocationStop, Node, NodeUsage, Plan, PlanResult, Resources

ROLE = "applier"
log = structlog.get_logger(__name__)


class Deposed(Exception):
    """This process no longer holds the applier term: it must stop writing."""


@dataclass(frozen=True)
class Placement:
    """One allocation a plan asks for, with the resources and host ports the fit check and the
    writes charge it for."""

    alloc: Allocation
    resources: Resources
    ports: tuple[int, ...]

    @property
    def alloc_id(self) -> uuid.UUID:
        return self.alloc.id


@dataclass
class Verdict:
    accepted: dict[uuid.UUID, list[Placement]] = field(default_factory=dict)
    stops: dict[uuid.UUID, list[AllocationStop]] = field(default_factory=dict)
    preemptions: dict[uuid.UUID, list[AllocationStop]] = field(default_factory=dict)
    rejected: list[uuid.UUID] = field(default_factory=list)

    @property
    def nodes(self) -> set[uuid.UUID]:
        return {*self.accepted, *self.stops, *self.preemptions, *self.rejected}

    def result(self, alloc_index: int, refresh_index: int) -> PlanResult:
        return PlanResult(
            node_update={n: tuple(s.alloc_id for s in items) for n, items in self.stops.items()},
            node_allocation={n: tuple(a.alloc_id for a in items) for n, items in self.accepted.items()},
            node_preemptions={n: tuple(s.alloc_id for s in items) for n, items in self.preemptions.items()},
            rejected_nodes=tuple(self.rejected),
            refresh_index=refresh_index,
            alloc_index=alloc_index,
        )


@dataclass(frozen=True)
class Touched:
    node_id: uuid.UUID
    live: bool
    resources: Resources
    ports: frozenset[int]


def _placement(alloc: Allocation) -> Placement:
    res = alloc.resources
    if res.memory_max_mb < res.memory_mb:  # the oldest rows carry no MemoryMaxMB: memory is the burst limit
        res = replace(res, memory_max_mb=res.memory_mb)
    return Placement(alloc=alloc, resources=res, ports=tuple(p.value for p in alloc.ports if p.value))


def _stored(row: RowMapping) -> PlanRowJson:
    """The plan's columns of a next_plan row, as the worker's encode_plan wrote them."""
    return {
        "eval_id": row["eval_id"],
        "priority": row["priority"],
        "snapshot_index": row["snapshot_index"],
        "all_at_once": row["all_at_once"],
        "namespace": row["namespace"],
        "job_id": row["job_id"],
        "node_update": row["node_update"],
        "node_allocation": row["node_allocation"],
        "node_preemptions": row["node_preemptions"],
        "deployment": row["deployment"],
        "deployment_updates": row["deployment_updates"],
    }


def apply_next(session: Session, term: int) -> int | None:
    """Apply the next pending plan; returns its id, or None when the queue is empty."""
    row = session.execute(query("next_plan")).mappings().first()
    if row is None:
        return None
    plan_id, plan = int(row["id"]), decode_plan(_stored(row))
    tables = ["allocations", "evaluations"]  # the plan's result needs no index: no blocking query watches it
    if plan.deployment or plan.deployment_updates:
        tables += ["deployments", "jobs"]  # a successful deployment marks its job version stable
    index = next_index(session, tables)
    if session.execute(query("fence_term"), {"role": ROLE, "term": term}).first() is None:
        raise Deposed(f"applier term {term} is no longer current")
    owned = session.execute(query("eval_still_owned"), {"eval_id": plan.eval_id, "token": row["eval_token"]})
    if owned.first() is None:
        _record(session, plan_id, Verdict(), index, term, status="rejected", refresh=0)
        return plan_id
    with timed(PLAN_EVALUATE):
        verdict = evaluate(session, plan)
    try:
        with session.begin_nested():
            _write(session, plan, verdict, index)
    except (IntegrityError, psycopg.errors.IntegrityError):
        # The database refused the writes (the overcommit trigger, a constraint): our own check
        # let something through it should not have. Refuse the whole plan, so the worker re-plans
        # from fresh state, instead of failing this plan again on every retry.
        log.error("database refused plan writes; rejecting the plan", plan_id=plan_id, exc_info=True)
        verdict = Verdict(rejected=list(verdict.nodes))
    PLAN_NODE_REJECTED.inc(len(verdict.rejected))
    status = "applied" if verdict.accepted or verdict.stops or not verdict.rejected else "rejected"
    _record(session, plan_id, verdict, index, term, status=status, refresh=index if verdict.rejected else 0)
    return plan_id


def evaluate(session: Session, plan: Plan) -> Verdict:
    placements = {n: [_placement(a) for a in allocs] for n, allocs in plan.node_allocation.items()}
    stops = {n: list(items) for n, items in plan.node_update.items()}
    evictions = {n: list(items) for n, items in plan.node_preemptions.items()}
    node_ids = list({*placements, *stops, *evictions})
    nodes = {r["id"]: node_from_row(r) for r in session.execute(query("plan_nodes"), {"ids": node_ids}).mappings()}
    usage = _usage(session, node_ids)
    touched = _touched(
        session,
        [a.alloc_id for allocs in placements.values() for a in allocs]
        + [s.alloc_id for items in (*stops.values(), *evictions.values()) for s in items],
    )
    verdict = Verdict()
    for node_id in node_ids:
        new, leaving, victims = placements.get(node_id, []), stops.get(node_id, []), evictions.get(node_id, [])
        if _victims_still_there(node_id, victims, touched) and (
            not new or _fits(nodes.get(node_id), usage.get(node_id, NodeUsage()), new, [*leaving, *victims], touched)
        ):
            verdict.accepted[node_id] = new
            verdict.stops[node_id] = leaving
            verdict.preemptions[node_id] = victims
        else:
            verdict.rejected.append(node_id)
    if plan.all_at_once and verdict.rejected:
        return Verdict(rejected=node_ids)
    verdict.accepted = {n: a for n, a in verdict.accepted.items() if a}
    verdict.stops = {n: s for n, s in verdict.stops.items() if s}
    verdict.preemptions = {n: s for n, s in verdict.preemptions.items() if s}
    return verdict


def _victims_still_there(node_id: uuid.UUID, victims: list[AllocationStop], touched: dict[uuid.UUID, Touched]) -> bool:
    """A preemption is only valid against the state it was computed from: every victim must
    still be live on this node. Otherwise the scheduler re-plans this node from fresh state."""
    return all(
        v.alloc_id in touched and touched[v.alloc_id].live and touched[v.alloc_id].node_id == node_id for v in victims
    )


def _fits(
    node: Node | None,
    usage: NodeUsage,
    new: list[Placement],
    stops: list[AllocationStop],
    touched: dict[uuid.UUID, Touched],
) -> bool:
    """Nomad's per-node check: the node must exist and be ready; new work needs an eligible
    node unless it only updates allocations already there; everything must fit."""
    if node is None or node.status != "ready":
        return False
    in_place = all(
        a.alloc_id in touched and touched[a.alloc_id].node_id == node.id and touched[a.alloc_id].live for a in new
    )
    if not in_place and (node.eligibility != "eligible" or node.draining):
        return False
    # Work leaving the node (stops, and the old shape of in-place updates) frees room first.
    leaving = [touched[s.alloc_id] for s in stops if s.alloc_id in touched] + [
        touched[a.alloc_id] for a in new if a.alloc_id in touched
    ]
    for old in leaving:
        if old.live and old.node_id == node.id:
            usage = remove_usage(usage, old.resources, old.ports)
    for alloc in new:
        if exhausted_dimension(node, usage, alloc.resources, alloc.ports) is not None:
            return False
        usage = add_usage(usage, alloc.resources, alloc.ports)
    return True


def _usage(session: Session, node_ids: list[uuid.UUID]) -> dict[uuid.UUID, NodeUsage]:
    ports: dict[uuid.UUID, set[int]] = defaultdict(set)
    for node_id, host_ports in session.execute(query("plan_node_ports"), {"ids": node_ids}):
        ports[node_id].update(host_ports)
    usage = {n: NodeUsage(ports=frozenset(p)) for n, p in ports.items()}
    for r in session.execute(query("plan_node_usage"), {"ids": node_ids}).mappings():
        usage[r["node_id"]] = NodeUsage(
            Resources(cpu=int(r["cpu"]), memory_mb=int(r["memory_mb"]), disk_mb=int(r["disk_mb"])),
            frozenset(ports.get(r["node_id"], ())),
        )
    return usage


def _touched(session: Session, ids: list[uuid.UUID]) -> dict[uuid.UUID, Touched]:
    if not ids:
        return {}
    rows = session.execute(query("plan_touched_allocs"), {"ids": ids}).mappings()
    return {
        r["id"]: Touched(
            node_id=r["node_id"],
            live=r["desired_status"] == "run" and r["client_status"] in ("pending", "running", "unknown"),
            resources=Resources(cpu=r["cpu"], memory_mb=r["memory_mb"], disk_mb=r["disk_mb"]),
            ports=frozenset(r["host_ports"]),
        )
        for r in rows
    }


def _write(session: Session, plan: Plan, verdict: Verdict, index: int) -> None:
    now = datetime.now(UTC)
    # The deployment first: the new allocations reference it.
    if plan.deployment:
        deployments.apply_plan_deployment(session, plan.deployment, index)
    deployments.apply_status_updates(session, plan.deployment_updates, index)
    # Stops and evictions first: the usage triggers must see the room freed before the
    # preemptors are inserted, or they would refuse the placement as an overcommit.
    evictions = [s for items in verdict.preemptions.values() for s in items]
    for stop in (*(s for items in verdict.stops.values() for s in items), *evictions):
        _write_stop(session, stop, index, now)
    accepted = [a for allocs in verdict.accepted.values() for a in allocs]
    existing = set(session.scalars(select(AllocRow.id).where(AllocRow.id.in_([a.alloc_id for a in accepted]))))
    for placed in (a for a in accepted if a.alloc_id in existing):
        _write_in_place(session, placed, index, now)
    fresh = [a for a in accepted if a.alloc_id not in existing]
    if fresh:
        _copy_allocations(session, fresh, index, now)
        for placed in fresh:
            if placed.alloc.previous_allocation:
                session.execute(
                    update(AllocRow)
                    .where(AllocRow.id == placed.alloc.previous_allocation)
                    .values(next_allocation=placed.alloc_id)
                )
    if evictions:
        _record_preemptions(session, evictions, index)
    # Evictions are not freed capacity: their room went to the preemptor.
    freed = [n for n, items in verdict.stops.items() if items]
    if freed:
        nodes = session.execute(query("plan_nodes"), {"ids": freed}).mappings()
        unblock_capacity(session, {r["id"]: r["computed_class"] for r in nodes}, index)


def _write_stop(session: Session, stop: AllocationStop, index: int, now: datetime) -> None:
    change = (
        update(AllocRow)
        .where(AllocRow.id == stop.alloc_id)
        .values(
            desired_status=stop.desired_status,
            desired_description=stop.description,
            modify_index=index,
            alloc_modify_index=index,
            modify_time=now,
        )
    )
    if stop.client_status:
        change = change.values(client_status=stop.client_status)
    session.execute(change)


def _write_in_place(session: Session, placed: Placement, index: int, now: datetime) -> None:
    alloc, resources = placed.alloc, placed.resources
    change = (
        update(AllocRow)
        .where(AllocRow.id == alloc.id)
        .values(
            job_version=alloc.job_version,
            eval_id=alloc.eval_id,
            cpu=resources.cpu,
            memory_mb=resources.memory_mb,
            memory_max_mb=resources.memory_max_mb,
            disk_mb=resources.disk_mb,
            modify_index=index,
            alloc_modify_index=index,
            modify_time=now,
        )
    )
    if alloc.deployment_id:
        # An in-place update joins the current deployment, where its health is judged anew.
        change = change.values(deployment_id=alloc.deployment_id, deployment_status=None)
    session.execute(change)


def _record_preemptions(session: Session, evictions: list[AllocationStop], index: int) -> None:
    """Link each victim to its preemptor, and give every job that lost work one `preemption`
    evaluation in this same transaction, so the evicted work is placed again (or waits as a
    blocked evaluation until capacity returns)."""
    linked = [s for s in evictions if s.preempted_by is not None]
    if linked:
        session.execute(
            query("mark_preempted_by"),
            {"victims": [s.alloc_id for s in linked], "bys": [s.preempted_by for s in linked]},
        )
    jobs = session.execute(query("preempted_jobs"), {"ids": [s.alloc_id for s in evictions]}).mappings()
    for job in jobs:
        insert_eval(
            session,
            EvalRequest(
                namespace=job["namespace"],
                job_id=job["id"],
                job_type=job["type"],
                priority=job["priority"],
                triggered_by="preemption",
                job_modify_index=job["job_modify_index"],
            ),
            index,
        )


COPY_COLUMNS = (
    "id",
    "namespace",
    "job_id",
    "job_version",
    "eval_id",
    "node_id",
    "node_name",
    "task_group",
    "name",
    "desired_status",
    "client_status",
    "cpu",
    "memory_mb",
    "memory_max_mb",
    "disk_mb",
    "host_ports",
    "allocated_resources",
    "previous_allocation",
    "preempted_allocations",
    "reschedule_tracker",
    "deployment_id",
    "deployment_status",
    "create_index",
    "modify_index",
    "alloc_modify_index",
    "create_time",
    "modify_time",
)


def _copy_allocations(session: Session, fresh: list[Placement], index: int, now: datetime) -> None:
    """COPY, not INSERT: a plan can place tens of thousands of allocations in one commit. The
    statement trigger on allocations still checks the whole batch against node capacity."""
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY allocations ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
        for placed in fresh:
            a, resources = placed.alloc, placed.resources
            copy.write_row(
                (
                    a.id,
                    a.namespace,
                    a.job_id,
                    a.job_version,
                    a.eval_id,
                    a.node_id,
                    a.node_name,
                    a.task_group,
                    a.name,
                    "run",
                    "pending",
                    resources.cpu,
                    resources.memory_mb,
                    resources.memory_max_mb,
                    resources.disk_mb,
                    list(placed.ports),
                    Jsonb({"Shared": {"DiskMB": resources.disk_mb, "Ports": ports_to_json(a.ports)}}),
                    a.previous_allocation,
                    list(a.preempted_allocations),
                    Jsonb(dict(a.reschedule_tracker)) if a.reschedule_tracker else None,
                    a.deployment_id,
                    Jsonb({"Canary": True}) if a.canary else None,
                    index,
                    index,
                    index,
                    now,
                    now,
                )
            )


def _record(
    session: Session, plan_id: int, verdict: Verdict, index: int, term: int, *, status: str, refresh: int
) -> None:
    session.execute(update(PlanRow).where(PlanRow.id == plan_id).values(status=status, applied_at=datetime.now(UTC)))
    session.add(PlanResultRow(plan_id=plan_id, applier_term=term, **encode_result(verdict.result(index, refresh))))
