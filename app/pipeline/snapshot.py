"""Loading what one scheduling pass reads, in one REPEATABLE READ READ ONLY transaction."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable

from sqlalchemy import Connection, Engine, RowMapping

from app.scheduler.preemption import PRIORITY_DELTA
from app.store.deployment_codec import deployment_from_mapping
from app.store.sql import query
from app.structs import (
    Allocation,
    Deployment,
    Evaluation,
    Job,
    Node,
    NodeSet,
    NodeUsage,
    Port,
    Resources,
    RunningAllocation,
    SchedulerConfiguration,
    Snapshot,
)


class SnapshotLoader:
    """Per worker process. Nodes change rarely, so they are cached by the 'nodes' state index
    and reloaded inside the same snapshot whenever that index moved. The cache holds a NodeSet:
    the nodes sorted into canonical order and indexed by ID once per change of the nodes table,
    and the same objects handed to every evaluation until then."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        self._nodes: tuple[int, NodeSet] | None = None

    def load(self, evaluation: Evaluation) -> Snapshot:
        with self._engine.connect() as conn, conn.begin():
            return read_snapshot(conn, evaluation, self._nodes_at)

    def _nodes_at(self, conn: Connection, index: int) -> NodeSet:
        if self._nodes is None or self._nodes[0] != index:
            self._nodes = (index, _all_nodes(conn))
        return self._nodes[1]


def read_snapshot(
    conn: Connection,
    evaluation: Evaluation,
    nodes_at: Callable[[Connection, int], NodeSet] | None = None,
    candidate: Job | None = None,
) -> Snapshot:
    """Everything a pass reads, inside the caller's (REPEATABLE READ) transaction. A `candidate`
    job replaces the stored one: `job plan` schedules a job that is not registered yet."""
    indexes = {str(n): int(v) for n, v in conn.execute(query("snapshot_indexes"))}
    nodes = nodes_at(conn, indexes["nodes"]) if nodes_at else _all_nodes(conn)
    job, allocations, versions = _job_state(conn, evaluation)
    if candidate is not None:
        job = candidate
        missing = sorted({a.job_version for a in allocations} - {job.version} - set(versions))
        if missing:  # the stored job's own version is now an old one
            versions = {**versions, **_versions(conn, evaluation, missing)}
    config = _config(conn)
    return Snapshot(
        index=indexes["_global"],
        job=job,
        nodes=nodes,
        allocations=allocations,
        usage=_usage(conn),
        job_versions=versions,
        config=config,
        preemptible=_preemptible(conn, job) if job and config.preemption_enabled(job.type) else {},
        deployment=_deployment(conn, evaluation),
    )


def _deployment(conn: Connection, ev: Evaluation) -> Deployment | None:
    params = {"namespace": ev.namespace, "job_id": ev.job_id}
    row = conn.execute(query("snapshot_deployment"), params).mappings().first()
    return None if row is None else deployment_from_mapping(dict(row))


def _all_nodes(conn: Connection) -> NodeSet:
    return NodeSet(node_from_row(r) for r in conn.execute(query("snapshot_nodes")).mappings())


def _preemptible(conn: Connection, job: Job) -> dict[uuid.UUID, tuple[RunningAllocation, ...]]:
    """Other jobs' live work far enough below this job's priority to be evicted, per node."""
    if job.priority - PRIORITY_DELTA < 1:
        return {}
    params = {"max_priority": job.priority - PRIORITY_DELTA, "namespace": job.namespace, "job_id": job.id}
    by_node: dict[uuid.UUID, list[RunningAllocation]] = defaultdict(list)
    for r in conn.execute(query("snapshot_preemptible"), params).mappings():
        by_node[r["node_id"]].append(RunningAllocation(allocation_from_row(r), r["job_priority"], r["max_parallel"]))
    return {node_id: tuple(items) for node_id, items in by_node.items()}


def _versions(conn: Connection, ev: Evaluation, versions: list[int]) -> dict[int, Job]:
    params = {"namespace": ev.namespace, "job_id": ev.job_id, "versions": versions}
    return {
        int(v["version"]): Job.from_spec(v["spec"], version=v["version"], job_modify_index=v["job_modify_index"])
        for v in conn.execute(query("snapshot_job_versions"), params).mappings()
    }


def _job_state(conn: Connection, ev: Evaluation) -> tuple[Job | None, tuple[Allocation, ...], dict[int, Job]]:
    params = {"namespace": ev.namespace, "job_id": ev.job_id}
    row = conn.execute(query("snapshot_job"), params).mappings().first()
    allocations = tuple(
        allocation_from_row(r) for r in conn.execute(query("snapshot_job_allocations"), params).mappings()
    )
    if row is None or row["purged_at"] is not None:
        return None, allocations, {}
    job = Job.from_spec(
        row["spec"], version=row["version"], job_modify_index=row["job_modify_index"], create_index=row["create_index"]
    )
    older = sorted({a.job_version for a in allocations if a.job_version != job.version})
    return job, allocations, _versions(conn, ev, older)


def _usage(conn: Connection) -> dict[uuid.UUID, NodeUsage]:
    ports: dict[uuid.UUID, set[int]] = defaultdict(set)
    for node_id, host_ports in conn.execute(query("snapshot_ports")):
        ports[node_id].update(host_ports)
    usage = {
        r["node_id"]: NodeUsage(
            Resources(cpu=int(r["cpu"]), memory_mb=int(r["memory_mb"]), disk_mb=int(r["disk_mb"])),
            frozenset(ports.pop(r["node_id"], ())),
        )
        for r in conn.execute(query("snapshot_usage")).mappings()
    }
    for node_id, held in ports.items():  # allocations holding ports but no resources
        usage[node_id] = NodeUsage(ports=frozenset(held))
    return usage


def _config(conn: Connection) -> SchedulerConfiguration:
    row = conn.execute(query("snapshot_config")).mappings().one()
    return SchedulerConfiguration(
        algorithm=row["scheduler_algorithm"],
        preempt_system=row["preemption_system"],
        preempt_sysbatch=row["preemption_sysbatch"],
        preempt_batch=row["preemption_batch"],
        preempt_service=row["preemption_service"],
        memory_oversubscription=row["memory_oversubscription"],
        pause_eval_broker=row["pause_eval_broker"],
    )


def parse_port_list(spec: str) -> frozenset[int]:
    """Nomad's reserved port syntax: '22,80,8000-8100'."""
    ports: set[int] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        low, _, high = part.partition("-")
        ports.update(range(int(low), int(high or low) + 1))
    return frozenset(ports)


def node_from_row(r: RowMapping) -> Node:
    drivers = r["drivers"] or {}
    return Node(
        id=r["id"],
        name=r["name"],
        datacenter=r["datacenter"],
        node_class=r["node_class"],
        node_pool=r["node_pool"],
        computed_class=r["computed_class"],
        status=r["status"],
        eligibility=r["scheduling_eligibility"],
        draining=r["drain"],
        capacity=Resources(cpu=r["cpu_shares"], memory_mb=r["memory_mb"], disk_mb=r["disk_mb"]),
        reserved=Resources(cpu=r["reserved_cpu"], memory_mb=r["reserved_memory_mb"], disk_mb=r["reserved_disk_mb"]),
        attributes={k: str(v) for k, v in (r["attributes"] or {}).items()},
        meta={k: str(v) for k, v in (r["meta"] or {}).items()},
        healthy_drivers=frozenset(
            name
            for name, info in drivers.items()
            if isinstance(info, dict) and info.get("Healthy", info.get("Detected"))
        ),
        reserved_ports=parse_port_list(r["reserved_ports"] or ""),
    )


def allocation_from_row(r: RowMapping) -> Allocation:
    shared = (r["allocated_resources"] or {}).get("Shared") or {}
    return Allocation(
        id=r["id"],
        namespace=r["namespace"],
        job_id=r["job_id"],
        job_version=r["job_version"],
        task_group=r["task_group"],
        name=r["name"],
        node_id=r["node_id"],
        node_name=r["node_name"],
        eval_id=r["eval_id"],
        desired_status=r["desired_status"],
        client_status=r["client_status"],
        resources=Resources(
            cpu=r["cpu"], memory_mb=r["memory_mb"], disk_mb=r["disk_mb"], memory_max_mb=r["memory_max_mb"]
        ),
        ports=tuple(
            Port(p.get("Label", ""), int(p.get("Value", 0)), int(p.get("To", 0)), p.get("HostNetwork", "default"))
            for p in shared.get("Ports") or ()
        ),
        previous_allocation=r["previous_allocation"],
        deployment_id=r["deployment_id"],
        followup_eval_id=r["followup_eval_id"],
        reschedule_tracker=r["reschedule_tracker"],
        desired_transition=r["desired_transition"] or {},
        create_index=r["create_index"],
        modify_index=r["modify_index"],
        healthy=r.get("healthy"),
        canary=bool(r.get("canary", False)),
    )
