"""/v1/client/metadata: Nomad's dynamic node metadata (`nomad node meta read|apply`). The
client on the node keeps it (in its data directory) and registers again with it merged into
the node's Meta, so these routes forward to that client over the signed link and relay its
NodeMetaResponse (Meta, Dynamic, Static)."""

from __future__ import annotations

import json

from flask import Blueprint, Response

from app.api.http.client_proxy import Unreachable, forward, relay_json, target_of_node
from app.api.http.params import arg, json_body, uuid_value
from app.values.errors import FieldProblem, InvalidInput

bp = Blueprint("client_meta", __name__)
MAX_KEYS = 256


def _unreachable(err: Unreachable) -> Response:
    return err.response


bp.register_error_handler(Unreachable, _unreachable)


@bp.get("/client/metadata")
def read_meta() -> Response:
    """?node_id= (required: no server here is a client)."""
    raw = arg("node_id")
    if not raw:
        raise InvalidInput.of("node_id", "is required: the node whose metadata to read")
    target = target_of_node(uuid_value(raw, "node_id"))
    return relay_json(forward(target, "GET", "/v1/client/metadata", {}), target)


@bp.route("/client/metadata", methods=["PUT", "POST"])
def apply_meta() -> Response:
    """{"NodeID": ..., "Meta": {"key": "value" | null}}: null removes a key (a static one too)."""
    body = json_body()
    node_id = body.get("NodeID")
    if not isinstance(node_id, str) or not node_id:
        raise InvalidInput.of("NodeID", "is required: the node whose metadata to change")
    meta = body.get("Meta")
    problems: list[FieldProblem] = []
    if not isinstance(meta, dict) or not meta:
        problems.append(FieldProblem("Meta", "must be a non-empty object of key to string or null"))
    elif len(meta) > MAX_KEYS:
        problems.append(FieldProblem("Meta", f"at most {MAX_KEYS} keys at once"))
    else:
        for key, value in meta.items():
            if not key or any(c.isspace() or c == "=" for c in key):
                problems.append(FieldProblem(f"Meta.{key}", "keys may not be empty or hold whitespace or '='"))
            elif value is not None and not isinstance(value, str):
                problems.append(FieldProblem(f"Meta.{key}", "must be a string or null"))
    if problems:
        raise InvalidInput(problems)
    target = target_of_node(uuid_value(node_id, "NodeID"))
    answer = forward(target, "PUT", "/v1/client/metadata", {"meta": json.dumps(meta, sort_keys=True)})
    return relay_json(answer, target)
