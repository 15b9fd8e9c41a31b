"""Nomad 1.10's dynamic host volume routes: list (GET /v1/volumes?type=host), read, create,
register, delete, and the node's own list its client works from."""

from __future__ import annotations

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.http.context import client_lane, read, respond, write
from app.api.http.listing import Entry, Order, as_is, list_query, page, with_token
from app.api.http.params import arg, json_body, namespace, prefix_arg, uuid_value
from app.api.routes.client.client import node_secret
from app.api.routes.volumes.host_volume_body import volume_request
from app.models import Allocation, HostVolume
from app.store import host_volumes as store
from app.store.client_allocs import authenticate
from app.wire.api.api_host_volumes import (
    HostVolumeAllocJson,
    HostVolumeJson,
    HostVolumeStubJson,
    HostVolumeWriteJson,
    NodeHostVolumeJson,
)

bp = Blueprint("host_volumes", __name__)
NANOS = 1_000_000_000
TABLES = ["host_volumes"]


def _nanos(volume: HostVolume) -> tuple[int, int]:
    return int(volume.created_at.timestamp() * NANOS), int(volume.updated_at.timestamp() * NANOS)


def volume_stub(volume: HostVolume) -> HostVolumeStubJson:
    created, modified = _nanos(volume)
    return HostVolumeStubJson(
        Namespace=volume.namespace,
        ID=str(volume.id),
        Name=volume.name,
        PluginID=volume.plugin_id,
        NodePool=volume.node_pool,
        NodeID=str(volume.node_id),
        CapacityBytes=volume.capacity_bytes,
        State=volume.state,
        CreateIndex=volume.create_index,
        CreateTime=created,
        ModifyIndex=volume.modify_index,
        ModifyTime=modified,
    )


def _alloc(alloc: Allocation) -> HostVolumeAllocJson:
    return HostVolumeAllocJson(
        ID=str(alloc.id),
        Name=alloc.name,
        Namespace=alloc.namespace,
        JobID=alloc.job_id,
        TaskGroup=alloc.task_group,
        NodeID=str(alloc.node_id),
        ClientStatus=alloc.client_status,
        DesiredStatus=alloc.desired_status,
    )


def volume_json(volume: HostVolume, allocs: list[Allocation]) -> HostVolumeJson:
    created, modified = _nanos(volume)
    return HostVolumeJson(
        Namespace=volume.namespace,
        ID=str(volume.id),
        Name=volume.name,
        PluginID=volume.plugin_id,
        NodePool=volume.node_pool,
        NodeID=str(volume.node_id),
        Constraints=list(volume.constraints) or None,
        RequestedCapacityMinBytes=volume.requested_capacity_min_bytes,
        RequestedCapacityMaxBytes=volume.requested_capacity_max_bytes,
        CapacityBytes=volume.capacity_bytes,
        RequestedCapabilities=list(volume.requested_capabilities),
        Parameters={k: str(v) for k, v in volume.parameters.items()} or None,
        HostPath=volume.host_path,
        State=volume.state,
        CreateIndex=volume.create_index,
        CreateTime=created,
        ModifyIndex=volume.modify_index,
        ModifyTime=modified,
        Allocations=[_alloc(a) for a in allocs] or None,
    )


def list_host_volumes() -> Response:
    """GET /v1/volumes?type=host, with Nomad's node_id, node_pool and prefix filters, filter=
    and paging (by namespace and ID), showing only the namespaces the caller may read."""
    wanted_ns, query = namespace(allow_wildcard=True), list_query()
    prefix = prefix_arg() or ""  # an ID or a name prefix (Nomad's volume commands find either)
    node = arg("node_id")
    node_id = uuid_value(node, "node_id") if node else None
    pool = arg("node_pool") or ""

    def fetch(session: Session) -> tuple[list[HostVolumeStubJson], str | None]:
        entries = []
        for volume in store.list_volumes(session, wanted_ns, prefix, node_id, pool):
            stub = volume_stub(volume)
            entries.append(Entry(volume.namespace, str(volume.id), volume.create_index, as_is(stub), stub))
        return page(entries, Order.NAMESPACE_ID, query)

    (rows, token), index = read(TABLES, fetch)
    return with_token(respond(rows, index), token)


@bp.get("/volume/host/<volume_id>")
def get_volume(volume_id: str) -> Response:
    key, ns = uuid_value(volume_id, "ID"), namespace(allow_wildcard=False) or "default"

    def fetch(session: Session) -> HostVolumeJson:
        volume = store.get_volume(session, key, ns)
        return volume_json(volume, store.claims(session, volume))

    body, index = read(TABLES, fetch)
    return respond(body, index)


@bp.route("/volume/host/create", methods=["PUT", "POST"])
def create_volume() -> Response:
    ns = namespace(allow_wildcard=False) or "default"
    request = volume_request(json_body().get("Volume"), ns, registering=False)
    answer = write(lambda s: _answer(store.create(s, request)))
    return respond(answer, answer["Volume"]["ModifyIndex"])


@bp.route("/volume/host/register", methods=["PUT", "POST"])
def register_volume() -> Response:
    ns = namespace(allow_wildcard=False) or "default"
    request = volume_request(json_body().get("Volume"), ns, registering=True)
    answer = write(lambda s: _answer(store.register(s, request)))
    return respond(answer, answer["Volume"]["ModifyIndex"])


def _answer(volume: HostVolume) -> HostVolumeWriteJson:
    return HostVolumeWriteJson(Volume=volume_json(volume, []), Warnings="")


@bp.delete("/volume/host/<volume_id>")
def delete_volume(volume_id: str) -> Response:
    key, ns = uuid_value(volume_id, "ID"), namespace(allow_wildcard=False) or "default"
    index = write(lambda s: store.delete(s, key, ns))
    return respond({"Index": index}, index)


@bp.get("/node/<node_id>/host-volumes")
@client_lane
def node_volumes(node_id: str) -> Response:
    """corral's client protocol: the node's dynamic volumes, for its client to create (mkdir),
    find (registered) or remove (gone). Authenticated by the node's SecretID."""
    key, secret = uuid_value(node_id, "NodeID"), node_secret()

    def fetch(session: Session) -> list[NodeHostVolumeJson]:
        authenticate(session, key, secret)
        return [
            NodeHostVolumeJson(
                ID=str(v.id),
                Name=v.name,
                Namespace=v.namespace,
                PluginID=v.plugin_id,
                HostPath=v.host_path,
                State=v.state,
                Parameters={k: str(p) for k, p in v.parameters.items()},
            )
            for v in store.node_volumes(session, key)
        ]

    rows, index = read(TABLES, fetch)
    return respond(rows, index)
