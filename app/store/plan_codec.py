"""Plans as JSON rows: what workers write and the applier reads."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from app.structs import Allocation, AllocationStop, Plan


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
        "PreemptedAllocations": [str(p) for p in a.preempted_allocations],
        "RescheduleTracker": dict(a.reschedule_tracker) if a.reschedule_tracker else None,
    }


def stop_to_json(s: AllocationStop) -> dict[str, Any]:
    return {
        "AllocID": str(s.alloc_id),
        "DesiredStatus": s.desired_status,
        "Description": s.description,
        "ClientStatus": s.client_status,
        "PreemptedByAllocation": str(s.preempted_by) if s.preempted_by else None,
    }


def stop_from_json(raw: Mapping[str, Any]) -> AllocationStop:
    by = raw.get("PreemptedByAllocation")
    return AllocationStop(
        uuid.UUID(raw["AllocID"]),
        raw["DesiredStatus"],
        raw["Description"],
        raw.get("ClientStatus"),
        uuid.UUID(by) if by else None,
    )


def plan_columns(plan: Plan) -> dict[str, Any]:
    return {
        "node_update": {str(n): [stop_to_json(s) for s in stops] for n, stops in plan.node_update.items()},
        "node_allocation": {str(n): [alloc_to_json(a) for a in allocs] for n, allocs in plan.node_allocation.items()},
        "node_preemptions": {str(n): [stop_to_json(s) for s in stops] for n, stops in plan.node_preemptions.items()},
    }
