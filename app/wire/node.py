"""Nomad's node as corral stores and serves it (api.Node and the blocks under it), its list stub,
node pools, and the statuses a node may hold."""

from __future__ import annotations

from typing import Literal, TypedDict

from app.wire.job import NetworkResourceSpec, ResourcesSpec

NodeStatus = Literal["initializing", "ready", "down", "disconnected"]
NodeEligibility = Literal["eligible", "ineligible"]


class NodeJson(TypedDict, total=False):
    """Nomad's Node."""

    ID: str
    SecretID: str
    Datacenter: str
    Name: str
    HTTPAddr: str
    TLSEnabled: bool
    Attributes: dict[str, str]
    Resources: ResourcesSpec | None
    Reserved: ResourcesSpec | None
    NodeResources: NodeResourcesJson | None
    ReservedResources: NodeReservedResourcesJson | None
    Links: dict[str, str] | None
    Meta: dict[str, str]
    NodeClass: str
    NodePool: str
    ComputedClass: str
    CgroupParent: str
    Drain: bool
    DrainStrategy: DrainStrategyJson | None
    SchedulingEligibility: NodeEligibility
    Status: NodeStatus
    StatusDescription: str
    IdentitySigningKeyID: str
    StatusUpdatedAt: int
    Events: list[NodeEventJson] | None
    Drivers: dict[str, DriverInfoJson]
    HostVolumes: dict[str, HostVolumeInfoJson] | None
    GCVolumesOnNodeGC: bool
    HostNetworks: dict[str, HostNetworkInfoJson] | None
    CSIControllerPlugins: dict[str, CSIInfoJson] | None
    CSINodePlugins: dict[str, CSIInfoJson] | None
    LastDrain: DrainMetadataJson | None
    LastMissedHeartbeatIndex: int
    LastAllocUpdateIndex: int
    CreateIndex: int
    ModifyIndex: int
    NodeMaxAllocs: int


class NodeResourcesJson(TypedDict, total=False):
    """Nomad's NodeResources."""

    Cpu: NodeCpuResourcesJson
    Memory: NodeMemoryResourcesJson
    Disk: NodeDiskResourcesJson
    Networks: list[NetworkResourceSpec]
    Devices: list[NodeDeviceResourceJson]
    MinDynamicPort: int
    MaxDynamicPort: int


class NodeCpuResourcesJson(TypedDict, total=False):
    """Nomad's NodeCpuResources."""

    CpuShares: int
    TotalCpuCores: int
    ReservableCpuCores: list[int]


class NodeMemoryResourcesJson(TypedDict, total=False):
    """Nomad's NodeMemoryResources."""

    MemoryMB: int


class NodeDiskResourcesJson(TypedDict, total=False):
    """Nomad's NodeDiskResources."""

    DiskMB: int


class NodeDeviceResourceJson(TypedDict, total=False):
    """Nomad's NodeDeviceResource."""

    Vendor: str
    Type: str
    Name: str
    Instances: list[NodeDeviceJson]
    Attributes: dict[str, AttributeJson]


class NodeDeviceJson(TypedDict, total=False):
    """Nomad's NodeDevice."""

    ID: str
    Healthy: bool
    HealthDescription: str
    Locality: NodeDeviceLocalityJson | None


class NodeDeviceLocalityJson(TypedDict, total=False):
    """Nomad's NodeDeviceLocality."""

    PciBusID: str


class AttributeJson(TypedDict, total=False):
    """Nomad's Attribute."""

    Float: float
    Int: int
    String: str
    Bool: bool
    Unit: str


class NodeReservedResourcesJson(TypedDict, total=False):
    """Nomad's NodeReservedResources."""

    Cpu: NodeReservedCpuResourcesJson
    Memory: NodeReservedMemoryResourcesJson
    Disk: NodeReservedDiskResourcesJson
    Networks: NodeReservedNetworkResourcesJson


class NodeReservedCpuResourcesJson(TypedDict, total=False):
    """Nomad's NodeReservedCpuResources."""

    CpuShares: int


class NodeReservedMemoryResourcesJson(TypedDict, total=False):
    """Nomad's NodeReservedMemoryResources."""

    MemoryMB: int


class NodeReservedDiskResourcesJson(TypedDict, total=False):
    """Nomad's NodeReservedDiskResources."""

    DiskMB: int


class NodeReservedNetworkResourcesJson(TypedDict, total=False):
    """Nomad's NodeReservedNetworkResources."""

    ReservedHostPorts: str


class DrainStrategyJson(TypedDict, total=False):
    """Nomad's DrainStrategy."""

    Deadline: int
    IgnoreSystemJobs: bool
    ForceDeadline: str
    StartedAt: str


class NodeEventJson(TypedDict, total=False):
    """Nomad's NodeEvent."""

    Message: str
    Subsystem: str
    Details: dict[str, str]
    Timestamp: str
    CreateIndex: int


class DriverInfoJson(TypedDict, total=False):
    """Nomad's DriverInfo."""

    Attributes: dict[str, str]
    Detected: bool
    Healthy: bool
    HealthDescription: str
    UpdateTime: str


class HostVolumeInfoJson(TypedDict, total=False):
    """Nomad's HostVolumeInfo."""

    Name: str  # the client's host_volume block name (corral keeps it beside Nomad's keys)
    Path: str
    ReadOnly: bool
    ID: str


class HostNetworkInfoJson(TypedDict, total=False):
    """Nomad's HostNetworkInfo."""

    Name: str
    CIDR: str
    Interface: str
    ReservedPorts: str


class CSIInfoJson(TypedDict, total=False):
    """Nomad's CSIInfo."""

    PluginID: str
    AllocID: str
    Healthy: bool
    HealthDescription: str
    UpdateTime: str
    RequiresControllerPlugin: bool
    RequiresTopologies: bool
    ControllerInfo: CSIControllerInfoJson | None
    NodeInfo: CSINodeInfoJson | None


class CSIControllerInfoJson(TypedDict, total=False):
    """Nomad's CSIControllerInfo."""

    SupportsCreateDelete: bool
    SupportsAttachDetach: bool
    SupportsListVolumes: bool
    SupportsGetCapacity: bool
    SupportsCreateDeleteSnapshot: bool
    SupportsListSnapshots: bool
    SupportsClone: bool
    SupportsReadOnlyAttach: bool
    SupportsExpand: bool
    SupportsListVolumesAttachedNodes: bool
    SupportsCondition: bool
    SupportsGet: bool


class CSINodeInfoJson(TypedDict, total=False):
    """Nomad's CSINodeInfo."""

    ID: str
    MaxVolumes: int
    AccessibleTopology: CSITopologyJson | None
    RequiresNodeStageVolume: bool
    SupportsStats: bool
    SupportsExpand: bool
    SupportsCondition: bool


class CSITopologyJson(TypedDict, total=False):
    """Nomad's CSITopology."""

    Segments: dict[str, str]


class DrainMetadataJson(TypedDict, total=False):
    """Nomad's DrainMetadata."""

    StartedAt: str
    UpdatedAt: str
    Status: str
    AccessorID: str
    Meta: dict[str, str]


class NodeListStubJson(TypedDict, total=False):
    """Nomad's NodeListStub."""

    Address: str
    ID: str
    Attributes: dict[str, str]
    Datacenter: str
    Name: str
    NodeClass: str
    NodePool: str
    Version: str
    Drain: bool
    SchedulingEligibility: NodeEligibility
    Status: NodeStatus
    StatusDescription: str
    Drivers: dict[str, DriverInfoJson]
    HostVolumes: dict[str, HostVolumeInfoJson] | None
    NodeResources: NodeResourcesJson | None
    ReservedResources: NodeReservedResourcesJson | None
    LastDrain: DrainMetadataJson | None
    CreateIndex: int
    ModifyIndex: int


class NodePoolJson(TypedDict, total=False):
    """Nomad's NodePool."""

    Name: str
    Description: str
    Meta: dict[str, str] | None
    NodeIdentityTTL: int
    SchedulerConfiguration: NodePoolSchedulerConfigurationJson | None
    CreateIndex: int
    ModifyIndex: int


class NodePoolSchedulerConfigurationJson(TypedDict, total=False):
    """Nomad's NodePoolSchedulerConfiguration."""

    SchedulerAlgorithm: str
    MemoryOversubscriptionEnabled: bool
