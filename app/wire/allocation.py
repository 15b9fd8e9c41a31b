"""Nomad's allocation as corral stores and serves it (api.Allocation and the blocks under it),
its list stub, and the statuses an allocation may hold."""

from __future__ import annotations

from typing import Literal, TypedDict

from app.wire.job import DNSConfigSpec, JobSpec, NetworkResourceSpec, ResourcesSpec
from app.wire.json import JsonObject

AllocDesiredStatus = Literal["run", "stop", "evict"]
AllocClientStatus = Literal["pending", "running", "complete", "failed", "lost", "unknown"]
# The client statuses an allocation does not leave.
AllocClientTerminalStatus = Literal["complete", "failed", "lost"]


class AllocationJson(TypedDict, total=False):
    """Nomad's Allocation."""

    ID: str
    Namespace: str
    EvalID: str
    Name: str
    NodeID: str
    NodeName: str
    JobID: str
    Job: JobSpec | None
    TaskGroup: str
    Resources: ResourcesSpec | None
    SharedResources: ResourcesSpec | None
    TaskResources: dict[str, ResourcesSpec] | None
    AllocatedResources: AllocatedResourcesJson | None
    Services: dict[str, str]
    Metrics: AllocationMetricJson | None
    DesiredStatus: AllocDesiredStatus
    DesiredDescription: str
    DesiredTransition: DesiredTransitionJson
    ClientStatus: AllocClientStatus
    ClientDescription: str
    TaskStates: dict[str, TaskStateJson] | None
    AllocStates: list[JsonObject] | None
    DeploymentID: str
    DeploymentStatus: AllocDeploymentStatusJson | None
    FollowupEvalID: str
    PreviousAllocation: str
    NextAllocation: str
    RescheduleTracker: RescheduleTrackerJson | None
    NetworkStatus: AllocNetworkStatusJson | None
    PreemptedAllocations: list[str] | None
    PreemptedByAllocation: str
    SigningKeyID: str
    CreateIndex: int
    ModifyIndex: int
    AllocModifyIndex: int
    CreateTime: int
    ModifyTime: int


class AllocatedResourcesJson(TypedDict, total=False):
    """Nomad's AllocatedResources."""

    Tasks: dict[str, AllocatedTaskResourcesJson]
    Shared: AllocatedSharedResourcesJson


class AllocatedTaskResourcesJson(TypedDict, total=False):
    """Nomad's AllocatedTaskResources."""

    Cpu: AllocatedCpuResourcesJson
    Memory: AllocatedMemoryResourcesJson
    Networks: list[NetworkResourceSpec]
    Devices: list[AllocatedDeviceResourceJson]


class AllocatedCpuResourcesJson(TypedDict, total=False):
    """Nomad's AllocatedCpuResources."""

    CpuShares: int


class AllocatedMemoryResourcesJson(TypedDict, total=False):
    """Nomad's AllocatedMemoryResources."""

    MemoryMB: int
    MemoryMaxMB: int


class AllocatedDeviceResourceJson(TypedDict, total=False):
    """Nomad's AllocatedDeviceResource."""

    Vendor: str
    Type: str
    Name: str
    DeviceIDs: list[str]


class AllocatedSharedResourcesJson(TypedDict, total=False):
    """Nomad's AllocatedSharedResources."""

    DiskMB: int
    Networks: list[NetworkResourceSpec]
    Ports: list[PortMappingJson]


class PortMappingJson(TypedDict, total=False):
    """Nomad's PortMapping."""

    Label: str
    Value: int
    To: int
    HostIP: str


class AllocationMetricJson(TypedDict, total=False):
    """Nomad's AllocationMetric."""

    NodesEvaluated: int
    NodesFiltered: int
    NodesInPool: int
    NodePool: str
    NodesAvailable: dict[str, int]
    ClassFiltered: dict[str, int]
    ConstraintFiltered: dict[str, int]
    NodesExhausted: int
    ClassExhausted: dict[str, int]
    DimensionExhausted: dict[str, int]
    QuotaExhausted: list[str]
    ResourcesExhausted: dict[str, ResourcesSpec]
    Scores: dict[str, float] | None  # deprecated by ScoreMetaData: corral always sends null
    AllocationTime: int
    CoalescedFailures: int
    ScoreMetaData: list[NodeScoreMetaJson]


class NodeScoreMetaJson(TypedDict, total=False):
    """Nomad's NodeScoreMeta."""

    NodeID: str
    Scores: dict[str, float]
    NormScore: float


class DesiredTransitionJson(TypedDict, total=False):
    """Nomad's DesiredTransition."""

    Migrate: bool
    Reschedule: bool
    ForceReschedule: bool
    NoShutdownDelay: bool
    MigrateDisablePlacement: bool


class TaskStateJson(TypedDict, total=False):
    """Nomad's TaskState."""

    State: str
    Failed: bool
    Restarts: int
    LastRestart: str
    StartedAt: str
    FinishedAt: str
    Events: list[TaskEventJson]


class TaskEventJson(TypedDict, total=False):
    """Nomad's TaskEvent."""

    Type: str
    Time: int
    DisplayMessage: str
    Details: dict[str, str]
    Message: str
    FailsTask: bool
    RestartReason: str
    SetupError: str
    DriverError: str
    DriverMessage: str
    ExitCode: int
    Signal: int
    KillReason: str
    KillTimeout: int
    KillError: str
    StartDelay: int
    DownloadError: str
    ValidationError: str
    DiskLimit: int
    DiskSize: int
    FailedSibling: str
    VaultError: str
    TaskSignalReason: str
    TaskSignal: str
    GenericSource: str


class AllocDeploymentStatusJson(TypedDict, total=False):
    """Nomad's AllocDeploymentStatus."""

    Healthy: bool
    Timestamp: str
    Canary: bool
    ModifyIndex: int


class RescheduleTrackerJson(TypedDict, total=False):
    """Nomad's RescheduleTracker."""

    Events: list[RescheduleEventJson]
    LastReschedule: str
    # corral's: the delay the servers chose when the failure was reported, and when it ends (ns).
    NextDelay: int
    NextRescheduleTime: int


class RescheduleEventJson(TypedDict, total=False):
    """Nomad's RescheduleEvent."""

    RescheduleTime: int
    PrevAllocID: str
    PrevNodeID: str
    Delay: int  # nomad/structs' (the api package leaves it out)


class AllocNetworkStatusJson(TypedDict, total=False):
    """Nomad's AllocNetworkStatus."""

    InterfaceName: str
    Address: str
    AddressIPv6: str
    DNS: DNSConfigSpec | None


class AllocationListStubJson(TypedDict, total=False):
    """Nomad's AllocationListStub."""

    ID: str
    EvalID: str
    Name: str
    Namespace: str
    NodeID: str
    NodeName: str
    JobID: str
    JobType: str
    JobVersion: int
    TaskGroup: str
    AllocatedResources: AllocatedResourcesJson | None
    DesiredStatus: AllocDesiredStatus
    DesiredDescription: str
    ClientStatus: AllocClientStatus
    ClientDescription: str
    TaskStates: dict[str, TaskStateJson]
    DeploymentStatus: AllocDeploymentStatusJson | None
    FollowupEvalID: str
    NextAllocation: str
    RescheduleTracker: RescheduleTrackerJson | None
    PreemptedAllocations: list[str]
    PreemptedByAllocation: str
    CreateIndex: int
    ModifyIndex: int
    CreateTime: int
    ModifyTime: int
