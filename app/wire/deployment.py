"""Nomad's deployment as corral stores and serves it, and the statuses a deployment may hold."""

from __future__ import annotations

from typing import Literal, TypedDict

DeploymentStatus = Literal[
    "running", "paused", "failed", "successful", "cancelled", "initializing", "pending", "blocked", "unblocking"
]
# The statuses of a deployment still in progress.
DeploymentActiveStatus = Literal["running", "paused", "initializing", "pending", "blocked", "unblocking"]


class DeploymentJson(TypedDict, total=False):
    """Nomad's Deployment."""

    ID: str
    Namespace: str
    JobID: str
    JobVersion: int
    JobModifyIndex: int
    JobSpecModifyIndex: int
    JobCreateIndex: int
    IsMultiregion: bool
    TaskGroups: dict[str, DeploymentStateJson]
    Status: DeploymentStatus
    StatusDescription: str
    EvalPriority: int
    CreateIndex: int
    ModifyIndex: int
    CreateTime: int
    ModifyTime: int


class DeploymentStateJson(TypedDict, total=False):
    """Nomad's DeploymentState."""

    PlacedCanaries: list[str]
    AutoRevert: bool
    AutoPromote: bool
    ProgressDeadline: int
    RequireProgressBy: str
    Promoted: bool
    DesiredCanaries: int
    DesiredTotal: int
    PlacedAllocs: int
    HealthyAllocs: int
    UnhealthyAllocs: int
