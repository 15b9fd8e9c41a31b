"""The applier's check of a batch of plans: each plan, in order, node by node, with the
scheduler's own fit function, against the state the batch started from plus what the plans
before it in the same batch already took or freed. Pure: the state is loaded by the caller."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import NamedTuple

from app.scheduler.fit import add_usage, exhausted_dimension, remove_usage
from app.structs import Allocation, AllocationStop, Node, NodeUsage, Plan, PlanResult, Resources


@dataclass(frozen=True)
class Placement:
    """One allocation a plan asks for, with the resources and host ports the fit check and the
    writes charge it for."""

    alloc: Allocation
    resources: Resources
    ports: tuple[int, ...]
    cores: tuple[int, ...] = ()  # the whole cores it reserves

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

    @property
    def writes(self) -> bool:
        return bool(self.accepted or self.stops or self.preemptions)

    @property
    def status(self) -> str:
        return "applied" if self.accepted or self.stops or not self.rejected else "rejected"

    def result(self, alloc_index: int, refresh_index: int) -> PlanResult:
        return PlanResult(
            node_update={n: tuple(s.alloc_id for s in items) for n, items in self.stops.items()},
            node_allocation={n: tuple(a.alloc_id for a in items) for n, items in self.accepted.items()},
            node_preemptions={n: tuple(s.alloc_id for s in items) for n, items in self.preemptions.items()},
            rejected_nodes=tuple(self.rejected),
            refresh_index=refresh_index,
            alloc_index=alloc_index,
        )


class Touched(NamedTuple):
    """An allocation a plan places, stops or evicts, as it stands (in the database, or after an
    earlier plan of the batch). A named tuple: the check makes one per placement (50,000 for a
    big batch job), and a tuple is built several times faster than a frozen dataclass."""

    node_id: uuid.UUID
    live: bool
    resources: Resources
    ports: Collection[int]
    owner: tuple[str, str, str]  # namespace, job and name: what an in-place update keeps
    cores: Collection[int] = ()


@dataclass
class BatchState:
    """Nodes, their usage and the touched allocations, as the batch so far leaves them."""

    nodes: dict[uuid.UUID, Node]
    usage: dict[uuid.UUID, NodeUsage]
    touched: dict[uuid.UUID, Touched]


def placement(alloc: Allocation) -> Placement:
    res = alloc.resources
    if res.memory_max_mb < res.memory_mb:  # the oldest rows carry no MemoryMaxMB: memory is the burst limit
        res = Resources(cpu=res.cpu, memory_mb=res.memory_mb, disk_mb=res.disk_mb, memory_max_mb=res.memory_mb)
    ports = tuple(p.value for p in alloc.ports if p.value) if alloc.ports else ()
    cores = tuple(sorted(alloc.reserved_cores)) if alloc.task_cores else ()
    return Placement(alloc=alloc, resources=res, ports=ports, cores=cores)


def plan_nodes(plan: Plan) -> list[uuid.UUID]:
    return list({*plan.node_allocation, *plan.node_update, *plan.node_preemptions})


def plan_alloc_ids(plan: Plan) -> list[uuid.UUID]:
    stops = (s for items in (*plan.node_update.values(), *plan.node_preemptions.values()) for s in items)
    return [a.id for allocs in plan.node_allocation.values() for a in allocs] + [s.alloc_id for s in stops]


def check(plan: Plan, state: BatchState) -> Verdict:
    """The plan's verdict; what it accepts is charged to (or freed from) `state` for the plans
    after it in the batch."""
    placements = {n: [placement(a) for a in allocs] for n, allocs in plan.node_allocation.items()}
    verdict, after = Verdict(), {}
    for node_id in plan_nodes(plan):
        new = placements.get(node_id, [])
        leaving = [*plan.node_update.get(node_id, ()), *plan.node_preemptions.get(node_id, ())]
        victims = list(plan.node_preemptions.get(node_id, ()))
        usage = _node_after(node_id, state, new, leaving) if _victims_still_there(node_id, victims, state) else None
        if usage is None:
            verdict.rejected.append(node_id)
            continue
        after[node_id] = usage
        verdict.accepted[node_id] = new
        verdict.stops[node_id] = list(plan.node_update.get(node_id, ()))
        verdict.preemptions[node_id] = victims
    if plan.all_at_once and verdict.rejected:
        return Verdict(rejected=plan_nodes(plan))
    verdict.accepted = {n: a for n, a in verdict.accepted.items() if a}
    verdict.stops = {n: s for n, s in verdict.stops.items() if s}
    verdict.preemptions = {n: s for n, s in verdict.preemptions.items() if s}
    _charge(state, verdict, after)
    return verdict


def _charge(state: BatchState, verdict: Verdict, after: dict[uuid.UUID, NodeUsage]) -> None:
    state.usage.update(after)
    for stop in (s for items in (*verdict.stops.values(), *verdict.preemptions.values()) for s in items):
        old = state.touched.get(stop.alloc_id)
        if old is not None:
            state.touched[stop.alloc_id] = old._replace(live=False)
    touched = state.touched
    for node_id, new in verdict.accepted.items():
        for p in new:
            touched[p.alloc.id] = Touched(node_id, True, p.resources, p.ports, owner_of(p.alloc), p.cores)


def owner_of(alloc: Allocation) -> tuple[str, str, str]:
    return (alloc.namespace, alloc.job_id, alloc.name)


def _updates_in_place(alloc: Allocation, old: Touched, node_id: uuid.UUID) -> bool:
    """New work with an existing allocation's ID must be an in-place update of it: the same
    job's allocation of the same name, live, on this node. Anything else would overwrite another
    allocation (the write updates by ID), so the node is refused and the scheduler re-plans."""
    return old.live and old.node_id == node_id and old.owner == owner_of(alloc)


def _victims_still_there(node_id: uuid.UUID, victims: list[AllocationStop], state: BatchState) -> bool:
    """A preemption is only valid against the state it was computed from: every victim must
    still be live on this node. Otherwise the scheduler re-plans this node from fresh state."""
    touched = state.touched
    return all(
        v.alloc_id in touched and touched[v.alloc_id].live and touched[v.alloc_id].node_id == node_id for v in victims
    )


def _node_after(
    node_id: uuid.UUID, state: BatchState, new: list[Placement], leaving: list[AllocationStop]
) -> NodeUsage | None:
    """The node's usage once its share of the plan is applied, or None when it does not fit.
    Nomad's per-node check: the node must exist and be ready; new work needs an eligible node
    unless it only updates allocations already there; everything must fit."""
    node, touched = state.nodes.get(node_id), state.touched
    if not all(_updates_in_place(a.alloc, touched[a.alloc_id], node_id) for a in new if a.alloc_id in touched):
        return None
    usage = state.usage.get(node_id, NodeUsage())
    # Work leaving the node (stops, and the old shape of in-place updates) frees room first.
    gone = [touched[s.alloc_id] for s in leaving if s.alloc_id in touched]
    gone += [touched[a.alloc_id] for a in new if a.alloc_id in touched]
    for old in gone:
        if old.live and old.node_id == node_id:
            usage = remove_usage(usage, old.resources, old.ports, old.cores)
    if not new:
        return usage
    if node is None or node.status != "ready":
        return None
    in_place = all(
        a.alloc_id in touched and touched[a.alloc_id].node_id == node_id and touched[a.alloc_id].live for a in new
    )
    if not in_place and (node.eligibility != "eligible" or node.draining):
        return None
    # All of the node's new work at once: resources only add up, so if the sum fits every prefix
    # does, and one that does not fit rejects the node whole anyway. The ports are checked
    # together too, duplicates among the new allocations included.
    cpu = memory_mb = disk_mb = memory_max_mb = 0
    ports: list[int] = []
    cores: list[int] = []
    for a in new:
        r = a.resources
        cpu, memory_mb, disk_mb = cpu + r.cpu, memory_mb + r.memory_mb, disk_mb + r.disk_mb
        memory_max_mb += r.memory_max_mb
        if a.ports:
            ports.extend(a.ports)
        if a.cores:
            cores.extend(a.cores)
    asked = Resources(cpu=cpu, memory_mb=memory_mb, disk_mb=disk_mb, memory_max_mb=memory_max_mb)
    if exhausted_dimension(node, usage, asked, ports, cores) is not None:
        return None
    return add_usage(usage, asked, ports, cores)
