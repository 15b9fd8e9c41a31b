"""The kinds of requirement a route may declare in app.api.access.authz.REQUIREMENTS: who may call
it, and where the namespace it acts in comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Public:
    """Anyone (health checks, the bootstrap, which guards itself)."""


@dataclass(frozen=True)
class Management:
    """A management token."""


@dataclass(frozen=True)
class Area:
    """node, agent or operator at read or write (Nomad's coarse policies)."""

    area: str
    level: str


@dataclass(frozen=True)
class InNamespace:
    """A namespace capability. `source` says where the namespace comes from: the ?namespace=
    parameter ('query'), the job in the body ('job'), or the object named in the path
    ('allocation', 'evaluation', 'deployment'), whose own namespace is checked."""

    capability: str
    source: str = "query"
    node_may: bool = False  # the node running the allocation may read it with its secret


@dataclass(frozen=True)
class ListIn:
    """A list that may span namespaces: allowed if the token has `capability` in the requested
    namespace (or in any, for '*'); items of other namespaces are skipped before the list is
    filtered and paged (app/api/access/visibility.py). `workload_may`: a workload identity may also
    list its own namespace (service discovery: a template's nomadServices)."""

    capability: str
    workload_may: bool = False


@dataclass(frozen=True)
class VariableOp:
    """A capability on the variable path in the URL (list, read, write, destroy), in the
    namespace of the body's Namespace (writes) or ?namespace= (Nomad's AllowVariableOperation)."""

    capability: str


@dataclass(frozen=True)
class NodeSecret:
    """The node named in the path, by its SecretID (or a management token)."""


@dataclass(frozen=True)
class NodeIntroduction:
    """Node registration: a token with node:write (the introduction token), or, for a node
    already registered, its own SecretID in the body (a client restarting after its
    introduction token expired)."""


@dataclass(frozen=True)
class OwnFilter:
    """Any caller; the route (or the namespace filter) narrows the answer to what the token may see."""

    what: str


@dataclass(frozen=True)
class InNodePool:
    """A node pool capability (read, write, delete) on the pool named in the path (`name`), or
    in the body's Name for a write to /v1/node/pools; with `node_read`, node:read as well (a
    pool's nodes, as Nomad's)."""

    capability: str
    source: str = "path"
    node_read: bool = False


@dataclass(frozen=True)
class ServiceRead:
    """Reading the service registrations of the ?namespace= namespace: read-job there, or a
    workload identity of that namespace (Nomad lets a task discover its namespace's services,
    which is what its templates' nomadService does)."""


Requirement = (
    Public
    | Management
    | Area
    | InNamespace
    | ListIn
    | VariableOp
    | NodeSecret
    | NodeIntroduction
    | OwnFilter
    | InNodePool
    | ServiceRead
)
