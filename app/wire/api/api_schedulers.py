"""Nomad's AgentSchedulerWorkersInfo and AgentSchedulerWorkerConfigResponse
(/v1/agent/schedulers and /v1/agent/schedulers/config)."""

from __future__ import annotations

from typing import TypedDict


class SchedulerWorkerJson(TypedDict):
    ID: str
    EnabledSchedulers: list[str]
    Started: str  # RFC 3339 with nanoseconds, UTC
    Status: str
    WorkloadStatus: str


class SchedulerWorkersJson(TypedDict):
    ServerID: str
    Schedulers: list[SchedulerWorkerJson]


class SchedulerWorkerConfigJson(TypedDict):
    ServerID: str
    NumSchedulers: int
    EnabledSchedulers: list[str]
