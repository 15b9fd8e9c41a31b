"""A snapshot's rows decoded into the scheduler's structs: nodes, allocations, the scheduler
configuration, and Nomad's reserved-port lists."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict

from app.pipeline.codecs.plan_codec import task_cores_from_json
from app.structs import Allocation, Node, Port, Resources, SchedulerConfiguration
from app.wire.allocation import DesiredTransitionJson
from app.wire.job import JobSpec


class JobRow(TypedDict):
    """snapshot_job(s): the job's row."""

    spec: JobSpec
    version: int
    job_modify_index: int
    create_index: int
    stop: bool
    purged_at: datetime | None


class VersionRow(TypedDict):
    """snapshot_job_versions(_used): a stored version of the job."""

    version: int
    spec: JobSpec
    job_modify_index: int


class ConfigRow(TypedDict):
    """snapshot_config: the scheduler configuration's one row."""

    scheduler_algorithm: str
    preemption_system: bool
    preemption_sysbatch: bool
    preemption_batch: bool
    preemption_service: bool
    memory_oversubscription: bool
    pause_eval_broker: bool


def config_from_row(row: ConfigRow | None) -> SchedulerConfiguration:
    assert row is not None, "scheduler_config has its one row from the initial migration"
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


def node_from_row(r: Mapping[Any, Any]) -> Node:
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
        reservable_cores=_core_ids(r.get("reservable_cores")),
        host_volumes={
            str(name): bool(volume.get("ReadOnly"))
            for name, volume in (r.get("host_volumes") or {}).items()
            if isinstance(volume, dict) and not volume.get("ID")  # a dynamic one is read below
        },
        dynamic_host_volumes={
            (str(ns), str(name)): uuid.UUID(str(volume_id))
            for ns, name, volume_id in r.get("dynamic_host_volumes") or ()
        },
    )


def _core_ids(raw: object) -> tuple[int, ...]:
    """NodeResources.Cpu.ReservableCpuCores as the client reported it; () when absent or not
    a list of core IDs."""
    if not isinstance(raw, list) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in raw):
        return ()
    return tuple(raw)


def allocation_from_row(r: Mapping[Any, Any]) -> Allocation:
    allocated = r["allocated_resources"] or {}
    shared = allocated.get("Shared") or {}
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
        desired_transition=_transition(r["desired_transition"]),
        create_index=r["create_index"],
        modify_index=r["modify_index"],
        healthy=r.get("healthy"),
        canary=bool(r.get("canary", False)),
        task_cores=task_cores_from_json(allocated["Tasks"]) if "Tasks" in allocated else (),
    )


def _transition(stored: DesiredTransitionJson | None) -> DesiredTransitionJson:
    return stored or {}
