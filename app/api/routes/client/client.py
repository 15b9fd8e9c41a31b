"""The client protocol: node heartbeats and allocation status batches, authenticated by the
node's SecretID in X-Nomad-Token (Nomad's AuthToken for node RPCs). The routes the servers
proxy to a client agent are in client_fs.py and client_allocs.py."""

from __future__ import annotations

import json
from typing import Literal, cast
from uuid import UUID

from flask import Blueprint, Response, request
from pydantic import BaseModel, ConfigDict, Field

from app.acl.client_link import LINK_KEY_FIELD, node_key
from app.api.http.client_proxy import Unreachable, forward, target_of_node
from app.api.http.context import client_lane, client_write, respond, state, write
from app.api.http.params import arg, json_body, optional_json_body, uuid_value
from app.api.http.validation import validate
from app.api.routes.client.local_client import local_node_id
from app.gc.client_gc import request_client_gc
from app.store import client_allocs
from app.store.node.heartbeat_ttl import HeartbeatPolicy
from app.store.node.heartbeats import heartbeat as record_heartbeat
from app.values.errors import Forbidden, NotFound
from app.wire.allocation import TaskStateJson

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
    policy = HeartbeatPolicy.of(current.settings)
    beat = record_heartbeat(current.writes, key, secret, policy, body.Status, current.fleet_size)
    ttl_ns = int(beat.ttl.total_seconds() * NANOS)
    answer = {"HeartbeatTTL": ttl_ns, "NodeStatus": beat.status, "ForceGCIndex": beat.force_gc_index}
    answer[LINK_KEY_FIELD] = node_key(current.link_secret, key)  # a changed link secret reaches the client
    return respond({**answer, "Index": beat.modify_index}, beat.modify_index)


class _HealthBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    DeploymentID: UUID | None = Field(default=None, strict=False)  # None: outside any deployment (migrate health)
    Healthy: bool


# Go's time.Time in JSON (RFC 3339, nanoseconds at most); the zero time stands for "never".
RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
ZERO_TIME = "0001-01-01T00:00:00Z"


class _TaskStateBody(BaseModel):
    """Nomad's TaskState as the client reports it and the servers store and serve it: times are
    RFC 3339 strings (an integer is refused naming the field), missing keys take Nomad's zero
    values, other keys (the driver's extras) are kept."""

    model_config = ConfigDict(extra="allow", strict=True)
    State: str = ""
    Failed: bool = False
    Restarts: int = Field(default=0, ge=0)
    LastRestart: str = Field(default=ZERO_TIME, pattern=RFC3339)
    StartedAt: str = Field(default=ZERO_TIME, pattern=RFC3339)
    FinishedAt: str = Field(default=ZERO_TIME, pattern=RFC3339)
    Events: list[dict[str, object]] | None = None  # kept as sent: the event's fields are the driver's


class _AllocUpdateBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    ID: UUID = Field(strict=False)
    ClientStatus: Literal[client_allocs.CLIENT_REPORTABLE]  # type: ignore[valid-type]
    ClientDescription: str = Field(default="", max_length=4096)
    TaskStates: dict[str, _TaskStateBody] = {}
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
            {name: cast(TaskStateJson, state.model_dump()) for name, state in u.TaskStates.items()},
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
    """Nomad's client GC endpoint: the node's client destroys every terminal allocation now
    (asked over the signed link; `Collected` says how many) and, should the link fail, at its
    next heartbeat. Without ?node_id=, the client local to this server, as Nomad's agent
    collects with its own client (none or several: Nomad's 400 naming node_id)."""
    raw = arg("node_id")
    node_id = uuid_value(raw, "node_id") if raw else local_node_id()
    result = write(lambda s: request_client_gc(s, node_id))
    body: dict[str, int] = {"Index": result.index, "Nodes": result.nodes}
    collected = _collect_now(node_id) if result.nodes else None
    if collected is not None:
        body["Collected"] = collected
    return respond(body, result.index)


def _collect_now(node_id: UUID) -> int | None:
    """The node's client collecting at once; None when it cannot be asked (down, no address,
    no valid answer): the request recorded above reaches it with its next heartbeat instead."""
    try:
        answer = forward(target_of_node(node_id), "PUT", "/v1/client/gc", {})
    except (Unreachable, NotFound):  # not ready, or no usable address (a simulated node)
        return None
    if answer.status != 200:
        return None
    try:
        collected = json.loads(answer.body).get("Collected")
    except (ValueError, AttributeError):
        return None
    return collected if isinstance(collected, int) else None
