"""Nomad 1.10's dynamic host volume JSON (api/host_volumes.go): the volume, its list stub, and
the create/register request and answer."""

from __future__ import annotations

from typing import TypedDict

from app.wire.job import ConstraintSpec


class HostVolumeCapabilityJson(TypedDict):
    """Nomad's HostVolumeCapability."""

    AttachmentMode: str
    AccessMode: str


class HostVolumeStubJson(TypedDict):
    """Nomad's HostVolumeStub (GET /v1/volumes?type=host)."""

    Namespace: str
    ID: str
    Name: str
    PluginID: str
    NodePool: str
    NodeID: str
    CapacityBytes: int
    State: str
    CreateIndex: int
    CreateTime: int
    ModifyIndex: int
    ModifyTime: int


class HostVolumeAllocJson(TypedDict):
    """The AllocationListStub fields a volume's Allocations carry in corral."""

    ID: str
    Name: str
    Namespace: str
    JobID: str
    TaskGroup: str
    NodeID: str
    ClientStatus: str
    DesiredStatus: str


class HostVolumeJson(TypedDict):
    """Nomad's HostVolume (GET /v1/volume/host/:id)."""

    Namespace: str
    ID: str
    Name: str
    PluginID: str
    NodePool: str
    NodeID: str
    Constraints: list[ConstraintSpec] | None
    RequestedCapacityMinBytes: int
    RequestedCapacityMaxBytes: int
    CapacityBytes: int
    RequestedCapabilities: list[HostVolumeCapabilityJson]
    Parameters: dict[str, str] | None
    HostPath: str
    State: str
    CreateIndex: int
    CreateTime: int
    ModifyIndex: int
    ModifyTime: int
    Allocations: list[HostVolumeAllocJson] | None


class HostVolumeWriteJson(TypedDict):
    """HostVolumeCreateResponse / HostVolumeRegisterResponse."""

    Volume: HostVolumeJson
    Warnings: str


class NodeHostVolumeJson(TypedDict):
    """One of a node's dynamic volumes as its client reads them (GET /v1/node/:id/host-volumes):
    what to create (PluginID mkdir) or check (a registered HostPath)."""

    ID: str
    Name: str
    Namespace: str
    PluginID: str
    HostPath: str
    State: str
    Parameters: dict[str, str]


class TaskGroupHostVolumeClaimJson(TypedDict):
    """Nomad's TaskGroupHostVolumeClaim: a sticky group's claim on a dynamic host volume."""

    ID: str
    Namespace: str
    JobID: str
    TaskGroupName: str
    AllocID: str
    VolumeID: str
    VolumeName: str
    CreateIndex: int
    ModifyIndex: int
