"""An in-memory cluster for scheduler tests: builders for nodes, jobs and allocations,
snapshots whose usage is computed from the live allocations, and plan application."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.scheduler import process
from app.scheduler.feasibility.computed_class import computed_class
from app.scheduler.fit import add_usage
from app.structs import (
    Allocation,
    Constraint,
    Evaluation,
    Job,
    NetworkAsk,
    Node,
    NodeUsage,
    Port,
    ReschedulePolicy,
    Resources,
    SchedulerConfiguration,
    SchedulerResult,
    Snapshot,
    Task,
    TaskGroup,
)
from app.wire.allocation import AllocClientStatus, AllocDesiredStatus
from app.wire.job import JobType
from app.wire.node import NodeEligibility, NodeStatus

NS = uuid.UUID("00000000-0000-4000-8000-000000000000")
NOW = 1_700_000_000 * 10**9
HOUR = 3600 * 10**9
NO_RESOURCES = Resources()


def uid(name: str) -> uuid.UUID:
    return uuid.uuid5(NS, name)


def node(
    name: str = "n1",
    *,
    dc: str = "dc1",
    cpu: int = 4000,
    mem: int = 8192,
    disk: int = 100_000,
    status: NodeStatus = "ready",
    eligibility: NodeEligibility = "eligible",
    draining: bool = False,
    node_class: str = "",
    pool: str = "default",
    attrs: Mapping[str, str] | None = None,
    meta: Mapping[str, str] | None = None,
    drivers: Iterable[str] = ("mock", "raw_exec"),
    reserved: Resources = NO_RESOURCES,
    reserved_ports: Iterable[int] = (),
    min_port: int = 20000,
    max_port: int = 32000,
) -> Node:
    attributes = {"kernel.name": "linux", "unique.hostname": name, **(attrs or {})}
    meta = dict(meta or {})
    return Node(
        id=uid("node/" + name),
        name=name,
        datacenter=dc,
        node_class=node_class,
        node_pool=pool,
        computed_class=computed_class(
            datacenter=dc, node_class=node_class, node_pool=pool, attributes=attributes, meta=meta
        ),
        status=status,
        eligibility=eligibility,
        draining=draining,
        capacity=Resources(cpu=cpu, memory_mb=mem, disk_mb=disk),
        reserved=reserved,
        attributes=attributes,
        meta=meta,
        healthy_drivers=frozenset(drivers),
        reserved_ports=frozenset(reserved_ports),
        min_dynamic_port=min_port,
        max_dynamic_port=max_port,
    )


def task(
    name: str = "t",
    *,
    driver: str = "mock",
    cpu: int = 100,
    mem: int = 128,
    constraints: Sequence[Constraint] = (),
    **kw: Any,
) -> Task:
    return Task(name, driver, Resources(cpu=cpu, memory_mb=mem), constraints=tuple(constraints), **kw)


def group(
    name: str = "g",
    count: int = 1,
    *,
    tasks: Sequence[Task] | None = None,
    disk: int = 0,
    constraints: Sequence[Constraint] = (),
    static_ports: Sequence[int] = (),
    dynamic_ports: int = 0,
    reschedule: ReschedulePolicy | None = None,
    **kw: Any,
) -> TaskGroup:
    networks: tuple[NetworkAsk, ...] = ()
    if static_ports or dynamic_ports:
        networks = (
            NetworkAsk(
                reserved_ports=tuple(Port(f"s{p}", p) for p in static_ports),
                dynamic_ports=tuple(Port(f"d{i}", 0) for i in range(dynamic_ports)),
            ),
        )
    return TaskGroup(
        name,
        count,
        tuple(tasks) if tasks is not None else (task(),),
        disk,
        constraints=tuple(constraints),
        networks=networks,
        reschedule=reschedule,
        **kw,
    )


def job(
    id: str = "web",
    groups: Sequence[TaskGroup] | None = None,
    *,
    type: JobType = "service",
    datacenters: Sequence[str] = ("*",),
    pool: str = "default",
    version: int = 0,
    priority: int = 50,
    **kw: Any,
) -> Job:
    return Job(
        namespace="default",
        id=id,
        name=id,
        type=type,
        priority=priority,
        datacenters=tuple(datacenters),
        node_pool=pool,
        task_groups=tuple(groups) if groups is not None else (group(),),
        version=version,
        **kw,
    )


def alloc(
    j: Job,
    n: Node,
    index: int = 0,
    *,
    group_name: str | None = None,
    client: AllocClientStatus = "running",
    desired: AllocDesiredStatus = "run",
    version: int | None = None,
    key: str = "",
    **kw: Any,
) -> Allocation:
    g = j.group(group_name) if group_name else j.task_groups[0]
    assert g is not None
    return Allocation(
        id=uid(f"alloc/{j.id}/{g.name}/{index}/{n.name}/{key}"),
        namespace=j.namespace,
        job_id=j.id,
        job_version=j.version if version is None else version,
        task_group=g.name,
        name=f"{j.id}.{g.name}[{index}]",
        node_id=n.id,
        node_name=n.name,
        eval_id=uid("old-eval"),
        desired_status=desired,
        client_status=client,
        resources=g.resources,
        **kw,
    )


def usage_of(allocs: Iterable[Allocation]) -> dict[uuid.UUID, NodeUsage]:
    usage: dict[uuid.UUID, NodeUsage] = {}
    for a in allocs:
        if not a.terminal:
            usage[a.node_id] = add_usage(usage.get(a.node_id, NodeUsage()), a.resources, a.host_ports, a.reserved_cores)
    return usage


def snapshot(
    j: Job | None,
    nodes: Sequence[Node],
    allocs: Sequence[Allocation] = (),
    *,
    others: Sequence[Allocation] = (),
    index: int = 100,
    versions: Sequence[Job] = (),
    algorithm: str = "binpack",
) -> Snapshot:
    return Snapshot(
        index=index,
        job=j,
        nodes=tuple(nodes),
        allocations=tuple(allocs),
        usage=usage_of([*allocs, *others]),
        job_versions={v.version: v for v in versions},
        config=SchedulerConfiguration(algorithm=algorithm),
    )


def evaluation(j: Job | None, *, key: str = "e1", type: str | None = None) -> Evaluation:
    return Evaluation(
        id=uid("eval/" + key),
        namespace="default",
        job_id=j.id if j else "gone",
        type=type or (j.type if j else "service"),
        priority=j.priority if j else 50,
        triggered_by="job-register",
        job_modify_index=1,
    )


def run(snap: Snapshot, *, key: str = "e1", type: str | None = None, now: int = NOW) -> SchedulerResult:
    j = snap.job
    ev = evaluation(j, key=key, type=type or (j.type if j else "service"))
    return process(ev, snap, now_ns=now)


def placed(result: SchedulerResult) -> list[Allocation]:
    return [a for allocs in result.plan.node_allocation.values() for a in allocs]


def stopped(result: SchedulerResult) -> dict[uuid.UUID, Any]:
    return {s.alloc_id: s for stops in result.plan.node_update.values() for s in stops}


def apply(snap: Snapshot, result: SchedulerResult, *, others: Sequence[Allocation] = ()) -> Snapshot:
    """The snapshot after the plan committed in full."""
    stops = stopped(result)
    allocs = {a.id: a for a in snap.allocations}
    for a_id, stop in stops.items():
        old = allocs[a_id]
        allocs[a_id] = dataclasses.replace(
            old, desired_status=stop.desired_status, client_status=stop.client_status or old.client_status
        )
    for a in placed(result):
        allocs[a.id] = a
    return dataclasses.replace(snap, allocations=tuple(allocs.values()), usage=usage_of([*allocs.values(), *others]))


def live(snap: Snapshot, group_name: str | None = None) -> list[Allocation]:
    return [a for a in snap.allocations if not a.terminal and (group_name is None or a.task_group == group_name)]


def pending_alloc(node_id: uuid.UUID, cpu: int, *, port: int = 0, **overrides: Any) -> Allocation:
    """A new allocation of job `web` as a plan places it (the applier's tests): `cpu` MHz, 64 MB,
    10 MB of disk, and one host port when `port` is set."""
    placed = Allocation(
        id=uuid.uuid4(),
        namespace="default",
        job_id="web",
        job_version=0,
        task_group="g",
        name="web.g[0]",
        node_id=node_id,
        eval_id=uuid.uuid4(),
        desired_status="run",
        client_status="pending",
        resources=Resources(cpu=cpu, memory_mb=64, disk_mb=10),
        ports=(Port("http", port),) if port else (),
    )
    return dataclasses.replace(placed, **overrides) if overrides else placed
