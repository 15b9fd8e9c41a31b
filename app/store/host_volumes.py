"""Dynamic host volumes (Nomad 1.10): create (a node is chosen; its client's mkdir plugin makes
the directory), register (an existing directory on a named node), read, delete (refused while
allocations use the volume), and what a node's client reports about them.

A volume's state moves when its node's client says so: the client lists its node's volumes,
makes or checks each directory, and registers the node with the volume in Node.HostVolumes
(with its ID), as Nomad's client fingerprints a volume; `apply_fingerprint` then marks it
ready. Every state change also takes the 'nodes' index: the scheduler reads ready volumes with
the nodes, whose cache follows that index."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Text, and_, cast, func, or_, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, HostVolume, JobVersion
from app.models import Node as NodeRow
from app.scheduler.feasibility.feasible import constraint_text, satisfies
from app.store.host_volume_claims import volume_claims
from app.structs import Node, Resources
from app.structs.groups import volume_source
from app.structs.job_spec import constraints as constraint_structs
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import InvalidInput, NotFound
from app.wire.api.api_host_volumes import HostVolumeCapabilityJson
from app.wire.job import ConstraintSpec
from app.wire.node import HostVolumeInfoJson

MKDIR = "mkdir"  # Nomad's built-in plugin: a directory under the client's host_volumes_dir
TABLES = ["host_volumes", "nodes"]


@dataclass(frozen=True)
class VolumeRequest:
    """A create or register request's volume, checked for shape by the route."""

    namespace: str
    name: str
    plugin_id: str = ""
    volume_id: uuid.UUID | None = None
    node_id: uuid.UUID | None = None
    node_pool: str = ""
    constraints: Sequence[ConstraintSpec] = ()
    capacity_min: int = 0
    capacity_max: int = 0
    capabilities: Sequence[HostVolumeCapabilityJson] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    host_path: str = ""


@dataclass(frozen=True)
class Claim:
    """A live allocation whose group mounts the volume."""

    alloc: Allocation


def list_volumes(
    session: Session, namespace: str | None, prefix: str = "", node_id: uuid.UUID | None = None, node_pool: str = ""
) -> list[HostVolume]:
    """`namespace` None: every namespace (`?namespace=*`)."""
    query = select(HostVolume).order_by(HostVolume.namespace, HostVolume.id)
    if namespace is not None:
        query = query.where(HostVolume.namespace == namespace)
    if prefix:
        # Nomad's volume commands find a volume by ID prefix or by name.
        query = query.where(
            or_(
                cast(HostVolume.id, Text).startswith(prefix, autoescape=True),
                HostVolume.name.startswith(prefix, autoescape=True),
            )
        )
    if node_id is not None:
        query = query.where(HostVolume.node_id == node_id)
    if node_pool:
        query = query.where(HostVolume.node_pool == node_pool)
    return list(session.scalars(query))


def get_volume(session: Session, volume_id: uuid.UUID, namespace: str) -> HostVolume:
    found = session.get(HostVolume, volume_id)
    if found is None or found.namespace != namespace:
        raise NotFound.of("ID", f"host volume {volume_id} not found")
    return found


def claims(session: Session, volume: HostVolume) -> list[Allocation]:
    """The non-terminal allocations on the volume's node, in its namespace, whose group has a
    host volume block naming it (Nomad's HostVolume.Allocations)."""
    query = (
        select(Allocation, JobVersion.spec)
        .join(
            JobVersion,
            and_(
                JobVersion.namespace == Allocation.namespace,
                JobVersion.job_id == Allocation.job_id,
                JobVersion.version == Allocation.job_version,
            ),
        )
        .where(
            Allocation.node_id == volume.node_id,
            Allocation.namespace == volume.namespace,
            Allocation.client_status.not_in(ALLOC_CLIENT_TERMINAL_STATUSES),
        )
        .order_by(Allocation.id)
    )
    found = []
    for alloc, spec in session.execute(query):
        groups = [g for g in spec.get("TaskGroups") or () if g.get("Name") == alloc.task_group]
        if any(_mounts(group.get("Volumes"), volume.name, alloc.name) for group in groups):
            found.append(alloc)
    return found


def _mounts(volumes: object, name: str, alloc_name: str) -> bool:
    """Nomad's MatchesRequestSource: a per_alloc request names the source with the
    allocation's index suffix."""
    if not isinstance(volumes, dict):
        return False
    return any(
        isinstance(v, dict)
        and v.get("Type", "host") == "host"
        and volume_source(str(v.get("Source") or ""), bool(v.get("PerAlloc")), alloc_name) == name
        for v in volumes.values()
    )


def create(session: Session, request: VolumeRequest) -> HostVolume:
    """Nomad's HostVolume.Create: a new volume goes on a node chosen by node_id, or by node
    pool and constraints; pending until its client reports the directory made."""
    if request.volume_id is not None:
        return _update(session, request)
    node = _place(session, request)
    return _insert(session, request, node, request.plugin_id or MKDIR, "")


def register(session: Session, request: VolumeRequest) -> HostVolume:
    """Nomad's HostVolume.Register: an existing directory on a named node; pending until the
    node's client finds the directory there, then ready."""
    if request.volume_id is not None and session.get(HostVolume, request.volume_id) is not None:
        return _update(session, request)
    if request.node_id is None:
        raise InvalidInput.of("NodeID", "is required to register a host volume")
    if not request.host_path.startswith("/"):
        raise InvalidInput.of("HostPath", "must be an absolute path on the node to register a host volume")
    node = _node(session, request.node_id)
    _check_node(node, request)
    return _insert(session, request, node, request.plugin_id, request.host_path)


def _update(session: Session, request: VolumeRequest) -> HostVolume:
    """A request naming an existing volume changes what may change in place (Nomad's update):
    not its name, namespace or node."""
    assert request.volume_id is not None
    found = session.get(HostVolume, request.volume_id, with_for_update=True)
    if found is None or found.namespace != request.namespace:
        raise NotFound.of("ID", f"host volume {request.volume_id} not found")
    if request.name != found.name:
        raise InvalidInput.of("Name", f"cannot change a host volume's name ({found.name!r})")
    if request.node_id is not None and request.node_id != found.node_id:
        raise InvalidInput.of("NodeID", f"cannot move host volume {found.id} to another node")
    index = next_index(session, TABLES)
    found.constraints = list(request.constraints)
    found.requested_capacity_min_bytes = request.capacity_min
    found.requested_capacity_max_bytes = request.capacity_max
    found.requested_capabilities = list(request.capabilities)
    found.parameters = dict(request.parameters)
    found.modify_index = index
    found.updated_at = datetime.now(UTC)
    return found


def _insert(session: Session, request: VolumeRequest, node: NodeRow, plugin_id: str, host_path: str) -> HostVolume:
    taken = session.scalar(
        select(HostVolume.id).where(HostVolume.node_id == node.id, HostVolume.name == request.name).limit(1)
    )
    if taken is not None or request.name in _static_names(node):
        raise InvalidInput.of("Name", f"node {node.id} already has a host volume named {request.name!r}")
    index = next_index(session, TABLES)
    volume = HostVolume(
        id=request.volume_id or uuid.uuid4(),
        namespace=request.namespace,
        name=request.name,
        plugin_id=plugin_id,
        node_id=node.id,
        node_pool=node.node_pool,
        constraints=list(request.constraints),
        requested_capacity_min_bytes=request.capacity_min,
        requested_capacity_max_bytes=request.capacity_max,
        capacity_bytes=0,
        requested_capabilities=list(request.capabilities),
        parameters=dict(request.parameters),
        host_path=host_path,
        state="pending",
        create_index=index,
        modify_index=index,
    )
    session.add(volume)
    session.flush()
    return volume


def _static_names(node: NodeRow) -> set[str]:
    return {name for name, info in (node.host_volumes or {}).items() if not info.get("ID")}


def _node(session: Session, node_id: uuid.UUID) -> NodeRow:
    found = session.get(NodeRow, node_id)
    if found is None:
        raise InvalidInput.of("NodeID", f"node {node_id} not found")
    return found


def _place(session: Session, request: VolumeRequest) -> NodeRow:
    """Nomad's placeHostVolume: the named node (checked), else the first ready node of the pool
    that meets the constraints and has no volume of that name, fewest volumes first."""
    if request.node_id is not None:
        node = _node(session, request.node_id)
        _check_node(node, request)
        return node
    pool = request.node_pool or "default"
    counts = select(HostVolume.node_id, func.count().label("volumes")).group_by(HostVolume.node_id).subquery("counts")
    rows = session.execute(
        select(NodeRow)
        .outerjoin(counts, counts.c.node_id == NodeRow.id)
        .where(NodeRow.node_pool == pool, NodeRow.status == "ready")
        .order_by(func.coalesce(counts.c.volumes, 0), NodeRow.id)
    ).scalars()
    named = set(session.scalars(select(HostVolume.node_id).where(HostVolume.name == request.name)))
    for node in rows:
        if node.id not in named and request.name not in _static_names(node) and _unmet(node, request) is None:
            return node
    raise InvalidInput.of(
        "NodePool",
        f"no ready node in node pool {pool!r} meets the volume's constraints and has no volume named {request.name!r}",
    )


def _check_node(node: NodeRow, request: VolumeRequest) -> None:
    if request.node_pool and request.node_pool != node.node_pool:
        raise InvalidInput.of(
            "NodePool", f"node {node.id} is in node pool {node.node_pool!r}, not {request.node_pool!r}"
        )
    unmet = _unmet(node, request)
    if unmet is not None:
        raise InvalidInput.of("Constraints", f"node {node.id} does not meet constraint {unmet!r}")


def _unmet(node: NodeRow, request: VolumeRequest) -> str | None:
    struct = _struct(node)
    for constraint in constraint_structs(list(request.constraints)):
        if not satisfies(constraint, struct):
            return constraint_text(constraint)
    return None


def _struct(node: NodeRow) -> Node:
    """The fields a constraint reads (attributes, meta, node.* targets)."""
    return Node(
        id=node.id,
        name=node.name,
        datacenter=node.datacenter,
        node_class=node.node_class,
        node_pool=node.node_pool,
        computed_class=node.computed_class,
        status="ready" if node.status == "ready" else "down",
        eligibility="eligible" if node.scheduling_eligibility == "eligible" else "ineligible",
        draining=node.drain,
        capacity=Resources(cpu=node.cpu_shares, memory_mb=node.memory_mb, disk_mb=node.disk_mb),
        reserved=Resources(),
        attributes={k: str(v) for k, v in (node.attributes or {}).items()},
        meta={k: str(v) for k, v in (node.meta or {}).items()},
    )


def delete(session: Session, volume_id: uuid.UUID, namespace: str) -> int:
    """Nomad's HostVolume.Delete: refused while allocations use the volume. The client removes
    a mkdir volume's directory when it next finds the volume gone."""
    found = session.get(HostVolume, volume_id, with_for_update=True)
    if found is None or found.namespace != namespace:
        raise NotFound.of("ID", f"host volume {volume_id} not found")
    using = claims(session, found)
    if using:
        ids = ", ".join(str(a.id) for a in using)
        raise InvalidInput.of("ID", f"volume {volume_id} in use by allocations: [{ids}]")
    sticky = volume_claims(session, found.id)
    if sticky:
        ids = ", ".join(str(c.id) for c in sticky)
        raise InvalidInput.of(
            "ID", f"volume {volume_id} is claimed by sticky volume claims: [{ids}] (delete them first)"
        )
    index = next_index(session, TABLES)
    session.delete(found)
    return index


def node_volumes(session: Session, node_id: uuid.UUID) -> list[HostVolume]:
    return list(session.scalars(select(HostVolume).where(HostVolume.node_id == node_id).order_by(HostVolume.id)))


def apply_fingerprint(session: Session, node_id: uuid.UUID, reported: Mapping[str, HostVolumeInfoJson]) -> None:
    """A node registered with these HostVolumes: each dynamic one (it carries its ID) is ready at
    the path the client gives; a ready volume of the node's that the client no longer reports is
    unavailable (Nomad's upsertHostVolumeForNode)."""
    paths = {str(info.get("ID")): str(info.get("Path") or "") for info in reported.values() if info.get("ID")}
    changed = []
    for volume in node_volumes(session, node_id):
        path = paths.get(str(volume.id))
        if path is not None and (volume.state != "ready" or volume.host_path != path):
            changed.append((volume, "ready", path))
        elif path is None and volume.state == "ready":
            changed.append((volume, "unavailable", volume.host_path))
    if not changed:
        return
    index = next_index(session, TABLES)
    for volume, state, host_path in changed:
        volume.state, volume.host_path, volume.modify_index = state, host_path, index
        volume.updated_at = datetime.now(UTC)
