"""Plans as JSON rows: what workers write and the applier reads."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from app.structs import Allocation, AllocationStop, Plan, Port, Resources


def alloc_to_json(a: Allocation) -> dict[str, Any]:
    return {
        "ID": str(a.id),
        "Name": a.name,
        "JobVersion": a.job_version,
        "TaskGroup": a.task_group,
        "NodeName": a.node_name,
        "EvalID": str(a.eval_id),
        "Resources": {
            "CPU": a.resources.cpu,
            "MemoryMB": a.resources.memory_mb,
            "MemoryMaxMB": a.resources.memory_max_mb,
            "DiskMB": a.resources.disk_mb,
        },
        "Ports": [{"Label": p.label, "Value": p.value, "To": p.to, "HostNetwork": p.host_network} for p in a.ports],
        "PreviousAllocation": str(a.previous_allocation) if a.previous_allocation else None,
    }


def alloc_from_json(raw: Mapping[str, Any], *, namespace: str, job_id: str, node_id: uuid.UUID) -> Allocation:
    res = raw["Resources"]
    previous = raw.get("PreviousAllocation")
    return Allocation(
        id=uuid.UUID(raw["ID"]),
        namespace=namespace,
        job_id=job_id,
        job_version=raw["JobVersion"],
        task_group=raw["TaskGroup"],
        name=raw["Name"],
        node_id=node_id,
        node_name=raw.get("NodeName", ""),
        eval_id=uuid.UUID(raw["EvalID"]),
        desired_status="run",
        client_status="pending",
        resources=Resources(
            cpu=res["CPU"],
            memory_mb=res["MemoryMB"],
            disk_mb=res["DiskMB"],
            memory_max_mb=res.get("MemoryMaxMB", res["MemoryMB"]),
        ),
        ports=tuple(
            Port(p["Label"], p["Value"], p.get("To", 0), p.get("HostNetwork", "default")) for p in raw["Ports"]
        ),
        previous_allocation=uuid.UUID(previous) if previous else None,
    )


def stop_to_json(s: AllocationStop) -> dict[str, Any]:
    return {
        "AllocID": str(s.alloc_id),
        "DesiredStatus": s.desired_status,
        "Description": s.description,
        "ClientStatus": s.client_status,
    }


def stop_from_json(raw: Mapping[str, Any]) -> AllocationStop:
    return AllocationStop(uuid.UUID(raw["AllocID"]), raw["DesiredStatus"], raw["Description"], raw.get("ClientStatus"))


def plan_columns(plan: Plan) -> dict[str, Any]:
    return {
        "node_update": {str(n): [stop_to_json(s) for s in stops] for n, stops in plan.node_update.items()},
        "node_allocation": {str(n): [alloc_to_json(a) for a in allocs] for n, allocs in plan.node_allocation.items()},
        "node_preemptions": {str(n): [stop_to_json(s) for s in stops] for n, stops in plan.node_preemptions.items()},
    }
