"""Plans as JSON rows: what workers write and the applier reads."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from app.structs import Allocation, AllocationStop, Deployment, DeploymentGroup, Plan


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
        "DeploymentID": str(a.deployment_id) if a.deployment_id else None,
        "Canary": a.canary,
    }


def deployment_to_json(d: Deployment) -> dict[str, Any]:
    return {
        "ID": str(d.id),
        "Namespace": d.namespace,
        "JobID": d.job_id,
        "JobVersion": d.job_version,
        "JobCreateIndex": d.job_create_index,
        "JobModifyIndex": d.job_modify_index,
        "Status": d.status,
        "StatusDescription": d.status_description,
        "EvalPriority": d.eval_priority,
        "TaskGroups": {name: group_to_json(g) for name, g in d.groups.items()},
    }


def group_to_json(g: DeploymentGroup) -> dict[str, Any]:
    """Stored in deployments.task_groups; the counts of allocations are added when read."""
    return {
        "AutoRevert": g.auto_revert,
        "AutoPromote": g.auto_promote,
        "ProgressDeadline": g.progress_deadline_ns,
        "RequireProgressBy": g.require_progress_by_ns,
        "Promoted": g.promoted,
        "DesiredCanaries": g.desired_canaries,
        "DesiredTotal": g.desired_total,
    }


DEPLOYMENT_COLUMNS = (
    "id",
    "namespace",
    "job_id",
    "job_version",
    "job_create_index",
    "job_modify_index",
    "job_spec_modify_index",
    "status",
    "status_description",
    "task_groups",
    "eval_priority",
)


def deployment_from_mapping(r: Mapping[str, Any]) -> Deployment:
    """From a deployments row (its DEPLOYMENT_COLUMNS)."""
    return Deployment(
        id=r["id"],
        namespace=r["namespace"],
        job_id=r["job_id"],
        job_version=r["job_version"],
        job_create_index=r["job_create_index"],
        job_modify_index=r["job_modify_index"],
        job_spec_modify_index=r["job_spec_modify_index"],
        status=r["status"],
        status_description=r["status_description"],
        groups={name: group_from_json(g) for name, g in (r["task_groups"] or {}).items()},
        eval_priority=r["eval_priority"],
    )


def group_from_json(raw: Mapping[str, Any]) -> DeploymentGroup:
    return DeploymentGroup(
        auto_revert=bool(raw.get("AutoRevert", False)),
        auto_promote=bool(raw.get("AutoPromote", False)),
        progress_deadline_ns=int(raw.get("ProgressDeadline", 0)),
        require_progress_by_ns=int(raw.get("RequireProgressBy", 0)),
        promoted=bool(raw.get("Promoted", False)),
        desired_canaries=int(raw.get("DesiredCanaries", 0)),
        desired_total=int(raw.get("DesiredTotal", 0)),
    )


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
        "deployment": deployment_to_json(plan.deployment) if plan.deployment else None,
        "deployment_updates": [
            {"DeploymentID": str(u.deployment_id), "Status": u.status, "StatusDescription": u.description}
            for u in plan.deployment_updates
        ],
    }
