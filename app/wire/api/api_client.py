"""The node agent's allocation endpoints as the servers relay them and the CLI reads them:
a task's measured resource use (Nomad's AllocResourceUsage), its service check results
(CheckQueryResult) and a file's stat (AllocFileInfo). Readers' shapes: every key may be absent."""

from __future__ import annotations

from typing import TypedDict


class MemoryStatsJson(TypedDict, total=False):
    RSS: int
    Cache: int
    Swap: int
    MappedFile: int
    Usage: int
    MaxUsage: int
    KernelUsage: int
    KernelMaxUsage: int
    Measured: list[str]


class CpuStatsJson(TypedDict, total=False):
    SystemMode: float
    UserMode: float
    TotalTicks: float
    ThrottledPeriods: int
    ThrottledTime: int
    Percent: float
    Measured: list[str]


class ResourceUsageJson(TypedDict, total=False):
    MemoryStats: MemoryStatsJson
    CpuStats: CpuStatsJson


class TaskResourceUsageJson(TypedDict, total=False):
    ResourceUsage: ResourceUsageJson
    Timestamp: int
    Pids: dict[str, ResourceUsageJson] | None


class AllocResourceUsageJson(TypedDict, total=False):
    ResourceUsage: ResourceUsageJson
    Tasks: dict[str, TaskResourceUsageJson]
    Timestamp: int


class CheckQueryResultJson(TypedDict, total=False):
    ID: str
    Mode: str  # healthiness or readiness
    Status: str  # success, failure or pending
    StatusCode: int
    Output: str
    Timestamp: int
    Group: str
    Task: str
    Service: str
    Check: str


class AllocFileInfoJson(TypedDict, total=False):
    Name: str
    IsDir: bool
    Size: int
    FileMode: str
    ModTime: str
    ContentType: str
