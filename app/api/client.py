"""The client protocol: node heartbeats and allocation status batches, authenticated by the
node's SecretID in X-Nomad-Token (Nomad's AuthToken for node RPCs); and allocation logs, which
the server proxies to the client that runs the allocation (its advertised HTTPAddr)."""

from __future__ import annotations

import base64
import time
from typing import Any, Literal
from uuid import UUID

import httpx
from flask import Blueprint, Response, request
from pydantic import BaseModel, ConfigDict, Field

from app.acl import client_link as link
from app.api.context import client_lane, client_write, respond, state, write
from app.api.errors import problem
from app.api.params import arg, bool_arg, integer_arg, json_body, optional_json_body, uuid_value
from app.api.validation import validate
from app.errors import FieldProblem, Forbidden, InvalidInput, NotFound
from app.gc.client_gc import request_client_gc
from app.store import allocs as alloc_store
from app.store import client_allocs
from app.store import nodes as node_store
from app.store.heartbeat_ttl import HeartbeatPolicy
from app.store.heartbeats import heartbeat as record_heartbeat

bp = Blueprint("client", __name__)
NANOS = 1_000_000_000
MAX_BATCH = 5000
LOG_PROXY_TIMEOUT_S = 10.0


def node_secret() -> str:
    secret = request.headers.get("X-Nomad-Token", "")
    if not secret:
        raise Forbidden.of("X-Nomad-Token", "is required: the node's SecretID")
    return secret


class _HeartbeatBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    Status: Literal["initializing", "ready"] | None = None


@bp.route("/node/<node_id>/heartbeat", methods=["PUT", "POST"])
@client_lane
def heartbeat(node_id: str) -> Response:
    """Nomad's Node.UpdateStatus: answers the TTL the client must heartbeat within."""
    key = uuid_value(node_id, "NodeID")
    secret = node_secret()
    body = validate(_HeartbeatBody, optional_json_body(), "")
    current = state()
    beat = record_heartbeat(current.writes, key, secret, HeartbeatPolicy.of(current.settings), body.Status)
    ttl_ns = int(beat.ttl.total_seconds() * NANOS)
    answer = {"HeartbeatTTL": ttl_ns, "NodeStatus": beat.status, "ForceGCIndex": beat.force_gc_index}
    return respond({**answer, "Index": beat.modify_index}, beat.modify_index)


class _HealthBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    DeploymentID: UUID | None = Field(default=None, strict=False)  # None: outside any deployment (migrate health)
    Healthy: bool


class _AllocUpdateBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    ID: UUID = Field(strict=False)
    ClientStatus: Literal[client_allocs.CLIENT_REPORTABLE]  # type: ignore[valid-type]
    ClientDescription: str = Field(default="", max_length=4096)
    TaskStates: dict[str, dict[str, Any]] = {}
    Destroyed: bool = False  # client-side GC removed its directory and driver resources
    DeploymentStatus: _HealthBody | None = None


class _AllocUpdatesBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    Allocs: list[_AllocUpdateBody] = Field(max_length=MAX_BATCH)


@bp.route("/node/<node_id>/allocations", methods=["PUT", "POST"])
@client_lane
def update_allocations(node_id: str) -> Response:
    """Nomad's Node.UpdateAlloc: the client's batch of allocation status changes."""
    key = uuid_value(node_id, "NodeID")
    secret = node_secret()
    body = validate(_AllocUpdatesBody, json_body(), "")
    updates = [
        client_allocs.AllocUpdate(
            u.ID,
            u.ClientStatus,
            u.ClientDescription,
            dict(u.TaskStates),
            u.Destroyed,
            None
            if u.DeploymentStatus is None
            else client_allocs.DeploymentHealth(u.DeploymentStatus.DeploymentID, u.DeploymentStatus.Healthy),
        )
        for u in body.Allocs
    ]
    result = client_write(lambda s: client_allocs.update_allocations(s, key, secret, updates))
    return respond(
        {"Index": result.index, "EvalIDs": [str(e) for e in result.eval_ids], "Updated": result.updated}, result.index
    )


@bp.route("/client/gc", methods=["GET", "PUT", "POST"])
def client_gc() -> Response:
    """Nomad's client GC endpoint: every terminal allocation on the node (or, without
    ?node_id=, on every node) is destroyed by its client at its next heartbeat."""
    raw = arg("node_id")
    node_id = uuid_value(raw, "node_id") if raw else None
    result = write(lambda s: request_client_gc(s, node_id))
    return respond({"Index": result.index, "Nodes": result.nodes}, result.index)


@bp.get("/client/fs/logs/<alloc_id>")
def logs(alloc_id: str) -> Response:
    """Proxied to the client running the allocation, so it works whichever host that is."""
    key = uuid_value(alloc_id, "AllocID")
    task = arg("task")
    if not task:
        raise InvalidInput.of("task", "is required: the task whose logs to read")
    kind = arg("type") or "stdout"
    if kind not in ("stdout", "stderr"):
        raise InvalidInput.of("type", f"must be 'stdout' or 'stderr', got {kind!r}")
    origin = arg("origin") or "start"
    if origin not in ("start", "end"):
        raise InvalidInput.of("origin", f"must be 'start' or 'end', got {origin!r}")
    offset = integer_arg("offset") or 0
    plain = bool_arg("plain")
    with state().reads() as session, session.begin():
        alloc = alloc_store.get_allocation(session, key)
        node = node_store.get_node(session, alloc.node_id)
        address, node_key = node.http_addr, link.key_from_hash(node.secret_hash)
    if not address or link.http_addr_problem(address) is not None:
        raise NotFound.of("AllocID", f"node {node.id} of allocation {key} has no usable client HTTP address")
    query = {"task": task, "type": kind, "origin": origin, "offset": str(offset)}
    path = f"/v1/client/fs/logs/{key}"
    stamp = int(time.time())
    proof = link.request_proof(node_key, "GET", path, query, stamp)
    headers = {link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)}
    try:
        reply = httpx.get(link.base_url(address) + path, params=query, headers=headers, timeout=LOG_PROXY_TIMEOUT_S)
        answer = reply.content
    except httpx.HTTPError:
        reply = None
    # One answer for every failure (refused, timed out, unsigned or forged reply): the caller
    # learns nothing about the network behind the address.
    if reply is None or not link.verify_response(
        node_key, proof, reply.status_code, answer, reply.headers.get(link.PROOF_HEADER, "")
    ):
        return problem(
            502, "Bad Gateway", [FieldProblem("", f"the client running allocation {key} gave no valid answer")]
        )
    if reply.status_code != 200:
        return Response(answer, status=reply.status_code, content_type=reply.headers.get("content-type"))
    return _log_response(answer, task, kind, offset, plain)


def _log_response(data: bytes, task: str, kind: str, offset: int, plain: bool) -> Response:
    if plain:
        return Response(data, content_type="text/plain; charset=utf-8")
    # Nomad's StreamFrame; one frame, as follow=true streaming is not offered.
    frame = {"Data": base64.b64encode(data).decode(), "File": f"alloc/logs/{task}.{kind}.0", "Offset": offset}
    return respond(frame, 0)
