"""Deployments: a job version's rollout, per task group, and a change of its status."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.values.constants import DEPLOYMENT_ACTIVE_STATUSES
from app.wire.deployment import DeploymentStatus


@dataclass(frozen=True)
class DeploymentGroup:
    """Nomad's DeploymentState for one task group. The counts of placed and healthy
    allocations are not kept here: the store counts them from the allocations."""

    auto_revert: bool = False
    auto_promote: bool = False
    progress_deadline_ns: int = 0
    # Unix ns; moved on by every healthy allocation (its health time + progress_deadline).
    require_progress_by_ns: int = 0
    promoted: bool = False
    desired_canaries: int = 0
    desired_total: int = 0


@dataclass(frozen=True)
class Deployment:
    id: uuid.UUID
    namespace: str
    job_id: str
    job_version: int
    job_create_index: int
    status: DeploymentStatus
    status_description: str = ""
    groups: Mapping[str, DeploymentGroup] = field(default_factory=dict)
    job_modify_index: int = 0
    job_spec_modify_index: int = 0
    eval_priority: int = 50

    @property
    def active(self) -> bool:
        return self.status in DEPLOYMENT_ACTIVE_STATUSES


@dataclass(frozen=True)
class DeploymentStatusUpdate:
    deployment_id: uuid.UUID
    status: DeploymentStatus
    description: str
