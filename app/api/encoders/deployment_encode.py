"""Deployments in Nomad's JSON shapes (structs.Deployment, DeploymentState and
DeploymentUpdateResponse). The per-group allocation counts are not stored with the deployment;
the caller passes them in, counted from the allocations."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import cast

from app.api.encoders.encode import ident, nanos
from app.models import Deployment
from app.store.deployment.deployments import Change, GroupCounts, from_row
from app.structs import DeploymentGroup
from app.values.rfc3339 import ZERO_TIME as ZERO_TIME  # re-exported: the output tests read it
from app.values.rfc3339 import rfc3339
from app.wire.api.api_deployments import DeploymentUpdateResponseJson
from app.wire.deployment import DeploymentJson, DeploymentStateJson, DeploymentStatus

NANOS = 1_000_000_000

Counts = Mapping[tuple[uuid.UUID, str], GroupCounts]


def deployment(row: Deployment, counts: Counts) -> DeploymentJson:
    groups = from_row(row).groups
    return {
        "ID": str(row.id),
        "Namespace": row.namespace,
        "JobID": row.job_id,
        "JobVersion": row.job_version,
        "JobModifyIndex": row.job_modify_index,
        "JobSpecModifyIndex": row.job_spec_modify_index,
        "JobCreateIndex": row.job_create_index,
        "IsMultiregion": row.is_multiregion,
        "TaskGroups": {name: group(g, counts.get((row.id, name), GroupCounts())) for name, g in groups.items()},
        "Status": cast(DeploymentStatus, row.status),  # the column's CHECK constraint holds it to these
        "StatusDescription": row.status_description,
        "EvalPriority": row.eval_priority,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "CreateTime": nanos(row.create_time),
        "ModifyTime": nanos(row.modify_time),
    }


def group(state: DeploymentGroup, counted: GroupCounts) -> DeploymentStateJson:
    return {
        "AutoRevert": state.auto_revert,
        "AutoPromote": state.auto_promote,
        "ProgressDeadline": state.progress_deadline_ns,
        "RequireProgressBy": rfc3339(state.require_progress_by_ns),
        "Promoted": state.promoted,
        "PlacedCanaries": [str(a) for a in counted.canaries],
        "DesiredCanaries": state.desired_canaries,
        "DesiredTotal": state.desired_total,
        "PlacedAllocs": counted.placed,
        "HealthyAllocs": counted.healthy,
        "UnhealthyAllocs": counted.unhealthy,
    }


def update_response(change: Change) -> DeploymentUpdateResponseJson:
    return {
        "EvalID": ident(change.eval_id),
        "EvalCreateIndex": change.eval_create_index,
        "DeploymentModifyIndex": change.deployment_modify_index,
        "RevertedJobVersion": change.reverted_job_version,
        "Index": change.index,
    }
