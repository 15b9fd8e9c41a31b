"""/v1/nodes, /v1/node/:id, eligibility, and node registration for clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, cast
from uuid import UUID

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session

from app.acl.client_link import LINK_KEY_FIELD, http_addr_problem, node_key
from app.api.access.callers import caller
from app.api.encoders import encode, node_encode
from app.api.http.context import client_lane, client_write, read, respond, state, write
from app.api.http.listing import Entry, Order, filtered, list_query, merged, page, predicate_arg, with_token
from app.api.http.params import bool_arg, id_prefix_arg, integer_arg, json_body, uuid_value
from app.api.http.validation import validate
from app.api.routes.allocs import listed
from app.api.routes.nodes.client_allocs import CLIENT_SINCE, client_allocations
from app.models import Node, NodeHeartbeat
from app.store.node import nodes as store
from app.store.node.drains import DrainSpec, set_drain
from app.store.node.heartbeat_ttl import HeartbeatPolicy
from app.values.constants import NODE_ELIGIBILITIES
from app.values.errors import InvalidInput
from app.wire.api.api_nodes import NodeReadJson
from app.wire.json import JsonObject
from app.wire.node import HostVolumeInfoJson, NodeListStubJson, NodeReservedResourcesJson, NodeResourcesJson

bp = Blueprint("nodes", __name__)
NANOS = 1_000_000_000
# The columns behind these amounts are INTEGER (int32).
MAX_INT32 = 2**31 - 1
MAX_PORT = 65535


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Cpu(_Strict):
    CpuShares: int = Field(ge=0, le=MAX_INT32)


class _Memory(_Strict):
    MemoryMB: int = Field(ge=0, le=MAX_INT32)


class _Disk(_Strict):
    DiskMB: int = Field(ge=0, le=MAX_INT32)


class _ReservedNetworks(_Strict):
    ReservedHostPorts: str = ""

    @field_validator("ReservedHostPorts")
    @classmethod
    def _port_list(cls, value: str) -> str:
        """Nomad's syntax, '22,80,8000-8100': the scheduler parses it on every snapshot."""
        for part in filter(None, (p.strip() for p in value.split(","))):
            low, dash, high = part.partition("-")
            if not low.isdigit() or (dash and not high.isdigit()):
                raise ValueError(f"must be ports or ranges like '22,80,8000-8100', got {part!r}")
            if not int(low) <= int(high or low) <= MAX_PORT:
                raise ValueError(f"port range {part!r} must be ascending and within 0-{MAX_PORT}")
        return value


class NodeResourcesBody(_Strict):
    Cpu: _Cpu
    Memory: _Memory
    Disk: _Disk = _Disk(DiskMB=0)


class ReservedResourcesBody(_Strict):
    Cpu: _Cpu = _Cpu(CpuShares=0)
    Memory: _Memory = _Memory(MemoryMB=0)
    Disk: _Disk = _Disk(DiskMB=0)
    Networks: _ReservedNetworks = _ReservedNetworks()


class HostVolumeBody(_Strict):
    """Nomad's ClientHostVolumeConfig as a client fingerprints it."""

    Name: str = Field(min_length=1)
    Path: str = Field(min_length=1)
    ReadOnly: bool = False
    ID: str = ""  # a dynamic host volume's (Nomad 1.10); empty for a static one


class NodeBody(_Strict):
    ID: UUID = Field(strict=False)
    SecretID: str | None = None
    Name: str = Field(min_length=1, max_length=256)
    Datacenter: str = Field(default="dc1", min_length=1)
    NodeClass: str = ""
    NodePool: str = Field(default="default", min_length=1)
    Status: Literal["initializing", "ready"] = "ready"
    Attributes: dict[str, str] = {}
    Meta: dict[str, str] = {}
    Drivers: dict[str, Any] = {}
    HostVolumes: dict[str, HostVolumeBody] | None = None
    NodeResources: NodeResourcesBody
    ReservedResources: ReservedResourcesBody = ReservedResourcesBody()
    HTTPAddr: str = ""

    @field_validator("HTTPAddr")
    @classmethod
    def _http_addr(cls, value: str) -> str:
        """The servers proxy log reads to this address: only host:port or http(s)://host:port."""
        problem = http_addr_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("NodePool")
    @classmethod
    def _not_all(cls, value: str) -> str:
        if value == "all":
            raise ValueError("'all' is a built-in pool that no node can join")
        return value


def _blocks(raw: JsonObject) -> tuple[NodeResourcesJson, NodeReservedResourcesJson]:
    """NodeResources and ReservedResources as sent: NodeBody's validation has checked their
    shape (ReservedResources may be left out)."""
    resources, reserved = raw.get("NodeResources"), raw.get("ReservedResources")
    return (
        cast(NodeResourcesJson, resources if isinstance(resources, dict) else {}),
        cast(NodeReservedResourcesJson, reserved if isinstance(reserved, dict) else {}),
    )


def _to_registration(node: NodeBody, raw: JsonObject) -> store.NodeRegistration:
    """`raw` is the validated Node object as sent: NodeResources and ReservedResources are
    stored whole (CPU cores, devices, host volumes and networks...), the amounts also in columns."""
    reserved = node.ReservedResources
    resources, reserved_resources = _blocks(raw)
    return store.NodeRegistration(
        id=node.ID,
        secret_id=node.SecretID,
        name=node.Name,
        datacenter=node.Datacenter,
        node_class=node.NodeClass,
        node_pool=node.NodePool,
        status=node.Status,
        attributes=node.Attributes,
        meta=node.Meta,
        drivers=node.Drivers,
        cpu_shares=node.NodeResources.Cpu.CpuShares,
        memory_mb=node.NodeResources.Memory.MemoryMB,
        disk_mb=node.NodeResources.Disk.DiskMB,
        reserved_cpu=reserved.Cpu.CpuShares,
        reserved_memory_mb=reserved.Memory.MemoryMB,
        reserved_disk_mb=reserved.Disk.DiskMB,
        reserved_ports=reserved.Networks.ReservedHostPorts,
        node_resources=resources,
        reserved_resources=reserved_resources,
        http_addr=node.HTTPAddr,
        host_volumes={name: _host_volume_info(volume) for name, volume in (node.HostVolumes or {}).items()},
    )


def _host_volume_info(volume: HostVolumeBody) -> HostVolumeInfoJson:
    info: HostVolumeInfoJson = {"Name": volume.Name, "Path": volume.Path, "ReadOnly": volume.ReadOnly}
    if volume.ID:
        info["ID"] = volume.ID
    return info


@bp.route("/node/register", methods=["PUT", "POST"])
@client_lane
def register() -> Response:
    body = json_body()
    raw = body.get("Node")
    node = validate(NodeBody, raw, "Node")
    assert isinstance(raw, dict)  # validation passed, so it is an object
    policy = HeartbeatPolicy.of(state().settings)
    result = client_write(lambda s: store.register_node(s, _to_registration(node, raw), policy))
    ttl = result.heartbeat_ttl.total_seconds() if result.heartbeat_ttl else 0
    return respond(
        {
            "NodeID": str(result.node_id),
            "SecretID": result.secret_id,
            "HeartbeatTTL": int(ttl * NANOS),
            "EvalIDs": [str(e) for e in result.eval_ids],
            "EvalCreateIndex": result.eval_create_index,
            "NodeModifyIndex": result.node_modify_index,
            "Index": result.index,
            # The key the servers sign their requests to this node's client with (never stored).
            LINK_KEY_FIELD: node_key(state().link_secret, result.node_id),
        },
        result.index,
    )


@bp.get("/nodes")
def list_nodes() -> Response:
    """By ID, as Nomad (which ignores reverse here); the filter sees the full node (Attributes,
    Meta, Drivers...) as in Nomad, and the stub's keys."""
    prefix, query = id_prefix_arg(), list_query(reverse=False)
    with_resources = bool_arg("resources")  # Nomad's ?resources=true adds the node's resources to each stub
    with_os = bool_arg("os")  # and ?os=true the node's operating system, as Attributes {"os.name": ...}

    def fetch(session: Session) -> tuple[list[NodeListStubJson], str | None]:
        entries = []
        for node in store.list_nodes(session, prefix):
            stub = node_encode.node_stub(node)
            if with_resources:
                full = node_encode.node(node)
                stub["NodeResources"] = full["NodeResources"]
                stub["ReservedResources"] = full["ReservedResources"]
            if with_os:
                stub["Attributes"] = {"os.name": str(node.attributes.get("os.name", ""))}
            entries.append(Entry("", str(node.id), node.create_index, _node_view(node, stub), stub))
        return page(entries, Order.ID, query)

    (body, token), index = read(["nodes"], fetch)
    return with_token(respond(body, index), token)


def _node_view(node: Node, stub: Mapping[str, object]) -> Callable[[], Mapping[str, object]]:
    return lambda: merged(node_encode.node(node), stub)


@bp.get("/node/<node_id>")
def get_node(node_id: str) -> Response:
    key = uuid_value(node_id, "NodeID")

    def fetch(session: Session) -> NodeReadJson:
        store_node = store.get_node(session, key)
        body = node_encode.node(store_node)
        # corral's extension: when the client last heartbeated (0 before its first one), for
        # the web UI's heartbeat age. Heartbeats take no index: the value is as of this read.
        beat = session.get(NodeHeartbeat, key)
        # And where the servers reach its client (HTTPAddr is left empty: see node_encode.node).
        return {
            **body,
            "LastHeartbeat": encode.nanos(beat.last_seen_at if beat else None),
            "LinkAddr": store_node.http_addr,
        }

    body, index = read(["nodes"], fetch)
    return respond(body, index)


@bp.route("/node/<node_id>/eligibility", methods=["PUT", "POST"])
def eligibility(node_id: str) -> Response:
    key = uuid_value(node_id, "NodeID")
    body = json_body()
    value = body.get("Eligibility")
    if value not in NODE_ELIGIBILITIES:
        raise InvalidInput.of("Eligibility", f"must be 'eligible' or 'ineligible', got {value!r}")
    if body.get("NodeID") not in (None, "", node_id):
        raise InvalidInput.of("NodeID", "does not match the node ID in the URL")
    result = write(lambda s: store.set_eligibility(s, key, value))
    return respond(
        {
            "EvalIDs": [str(e) for e in result.eval_ids],
            "EvalCreateIndex": result.eval_create_index,
            "NodeModifyIndex": result.node_modify_index,
            "Index": result.index,
            # The key the servers sign their requests to this node's client with (never stored).
            LINK_KEY_FIELD: node_key(state().link_secret, result.node_id),
        },
        result.index,
    )


@bp.get("/node/<node_id>/allocations")
@client_lane
def node_allocations(node_id: str) -> Response:
    """?filter= applies (Nomad's route takes none: an extension). Woken only by this node's
    changes: thousands of clients each hold one of these. ?client_since=N (corral's client)
    answers in app.wire's ClientAllocJson shape instead (client_allocs.py)."""
    key, predicate = uuid_value(node_id, "NodeID"), predicate_arg()
    since = integer_arg(CLIENT_SINCE)
    if since is not None:
        if predicate is not None:
            raise InvalidInput.of("filter", f"does not apply with {CLIENT_SINCE}")
        # Woken by the servers' changes only: the statuses this client reported it knows.
        watched, at = read(
            ["allocations", "nodes"], lambda s: client_allocations(s, key, since), node=key, servers_only=True
        )
        return respond(watched, at)
    body, index = read(
        ["allocations", "nodes"],
        lambda s: filtered(predicate, listed(s, store.node_allocations(s, key)), lambda a: a),
        node=key,
    )
    return respond(body, index)


class _DrainSpecBody(_Strict):
    Deadline: int = Field(default=0, ge=-1, le=2**63 - 1)
    IgnoreSystemJobs: bool = False


class _DrainBody(_Strict):
    NodeID: str = ""
    DrainSpec: _DrainSpecBody | None = None
    MarkEligible: bool = False
    Meta: dict[str, str] | None = None  # Nomad's client always sends the key, null when unset


@bp.route("/node/<node_id>/drain", methods=["PUT", "POST"])
def drain(node_id: str) -> Response:
    """Start (DrainSpec), or cancel (no DrainSpec; MarkEligible makes the node eligible again)."""
    key = uuid_value(node_id, "NodeID")
    body = validate(_DrainBody, json_body(), "")
    if body.NodeID not in ("", node_id):
        raise InvalidInput.of("NodeID", "does not match the node ID in the URL")
    spec = None if body.DrainSpec is None else DrainSpec(body.DrainSpec.Deadline, body.DrainSpec.IgnoreSystemJobs)
    who = caller().accessor
    accessor = "" if who == "anonymous" else who  # Nomad's DrainMetadata.AccessorID: empty without ACLs
    index, evals = write(lambda s: set_drain(s, key, spec, body.MarkEligible, body.Meta or {}, accessor))
    return respond(
        {
            "EvalIDs": [str(e) for e in evals],
            "EvalCreateIndex": index if evals else 0,
            "NodeModifyIndex": index,
            "Index": index,
        },
        index,
    )
