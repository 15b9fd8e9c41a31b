"""Deployments between the typed struct (app.structs.Deployment) and their JSON: as a plan
carries them, as deployments.task_groups stores their groups, and from a deployments row."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from app.structs import Deployment, DeploymentGroup
from app.wire.plan import DeploymentGroupJson, PlanDeploymentJson


def deployment_to_json(d: Deployment) -> PlanDeploymentJson:
    return {
        "ID": str(d.id),
        "Namespace": d.namespace,
        "JobID": d.job_id,
        "JobVersion": d.job_version,
        "JobCreateIndex": d.job_create_index,
        "JobModifyIndex": d.job_modify_index,
        "JobSpecModifyIndex": d.job_spec_modify_index,
        "Status": d.status,
        "StatusDescription": d.status_description,
        "EvalPriority": d.eval_priority,
        "TaskGroups": {name: group_to_json(g) for name, g in d.groups.items()},
    }


def deployment_from_json(raw: PlanDeploymentJson) -> Deployment:
    return Deployment(
        id=uuid.UUID(raw["ID"]),
        namespace=raw["Namespace"],
        job_id=raw["JobID"],
        job_version=raw["JobVersion"],
        job_create_index=raw["JobCreateIndex"],
        status=raw["Status"],
        status_description=raw["StatusDescription"],
        groups={name: group_from_json(g) for name, g in raw["TaskGroups"].items()},
        job_modify_index=raw["JobModifyIndex"],
        job_spec_modify_index=raw.get("JobSpecModifyIndex", 0),
        eval_priority=raw["EvalPriority"],
    )


def group_to_json(g: DeploymentGroup) -> DeploymentGroupJson:
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


def group_from_json(raw: DeploymentGroupJson) -> DeploymentGroup:
    # Lenient: stored groups are merged and edited by operators' and the watcher's writes.
    return DeploymentGroup(
        auto_revert=bool(raw.get("AutoRevert", False)),
        auto_promote=bool(raw.get("AutoPromote", False)),
        progress_deadline_ns=int(raw.get("ProgressDeadline", 0)),
        require_progress_by_ns=int(raw.get("RequireProgressBy", 0)),
        promoted=bool(raw.get("Promoted", False)),
        desired_canaries=int(raw.get("DesiredCanaries", 0)),
        desired_total=int(raw.get("DesiredTotal", 0)),
    )


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
