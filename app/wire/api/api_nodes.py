"""Bodies of the node writes as the CLI sends them, and a node as GET /v1/node/:id answers it
(the node itself is in app/wire's node module), the node's allocations as corral's client
watches them and the allocation updates it sends."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from app.wire.allocation import AllocationJson, DesiredTransitionJson, TaskStateJson
from app.wire.node import NodeJson


class DrainSpecJson(TypedDict):
    Deadline: int  # nanoseconds; -1 forces the drain now, 0 waits for no deadline
    IgnoreSystemJobs: bool


class NodeDrainRequest(TypedDict):
    """Nomad's NodeUpdateDrainRequest: a DrainSpec enables the drain, none disables it."""

    NodeID: str
    MarkEligible: bool
    DrainSpec: NotRequired[DrainSpecJson]


class NodeReadJson(NodeJson, total=False):
    """corral's extensions of a node read: when the client last heartbeated (Unix nanoseconds,
    0 before its first one) and where the servers reach it."""

    LastHeartbeat: int
    LinkAddr: str


class ClientAllocJson(TypedDict):
    """One allocation of the node in the answer corral's own client asks for
    (GET /v1/node/:node_id/allocations?client_since=N): what the client acts on, and the whole
    allocation (as GET /v1/allocation/:id answers it) when the servers changed it past index N
    (AllocModifyIndex, which the client's own status reports do not move), else null. One round
    trip per change, as Nomad's client gets with Node.GetClientAllocs and Alloc.GetAllocs in two."""

    ID: str
    AllocModifyIndex: int
    DesiredStatus: str
    ClientStatus: str
    DeploymentID: str
    DesiredTransition: DesiredTransitionJson
    Allocation: AllocationJson | None


class AllocHealthReportJson(TypedDict):
    """An allocation's deployment health as its client reports it: Nomad's AllocDeploymentStatus
    with the deployment it was judged for (None: none, a migration's health), which Nomad's
    client takes from the allocation itself."""

    DeploymentID: str | None
    Healthy: bool
    Timestamp: str


class AllocUpdateJson(TypedDict):
    """One allocation of a client's `PUT /v1/node/:id/allocations`: the keys of Nomad's
    Allocation that its Node.UpdateAlloc carries, and `Destroyed`. What `corral client` and
    `corral fleet` send and keep until the servers took it. The servers
    take the client statuses pending, running, complete and failed (app.store.client_allocs.
    CLIENT_REPORTABLE); `Destroyed`: the client removed the allocation's directory and driver
    resources (client-side GC)."""

    ID: str
    ClientStatus: str
    ClientDescription: str
    TaskStates: dict[str, TaskStateJson]
    Destroyed: NotRequired[bool]
    DeploymentStatus: NotRequired[AllocHealthReportJson]
