"""Nomad 1.8's /v1/jobs/statuses answer (nomad/structs/job.go: JobStatusesJob and its parts),
the list the web UI's jobs page polls."""

from __future__ import annotations

from typing import TypedDict


class JobStatusesDeploymentJson(TypedDict):
    Canary: bool
    Healthy: bool | None


class JobStatusesAllocJson(TypedDict):
    ID: str
    Group: str
    ClientStatus: str
    NodeID: str
    DeploymentStatus: JobStatusesDeploymentJson
    JobVersion: int
    FollowupEvalID: str
    HasPausedTask: bool


class JobStatusesLatestDeploymentJson(TypedDict):
    ID: str
    IsActive: bool
    JobVersion: int
    Status: str
    StatusDescription: str
    AllAutoPromote: bool
    RequiresPromotion: bool


class JobStatusesJobJson(TypedDict):
    ID: str
    Namespace: str
    Name: str
    Type: str
    NodePool: str
    Datacenters: list[str] | None
    Priority: int
    Version: int
    SubmitTime: int
    ModifyIndex: int
    Allocs: list[JobStatusesAllocJson] | None
    GroupCountSum: int
    ChildStatuses: list[str] | None
    ParentID: str
    LatestDeployment: JobStatusesLatestDeploymentJson | None
    Stop: bool
    IsPack: bool
    Status: str
