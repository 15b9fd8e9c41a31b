"""POST /v1/node/:id/purge (Nomad's Node.Deregister): see app/store/node/node_purge.py."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.http.context import respond, write
from app.api.http.params import uuid_value
from app.store.node.node_purge import purge_node

bp = Blueprint("node_purge", __name__)


@bp.route("/node/<node_id>/purge", methods=["PUT", "POST"])
def purge(node_id: str) -> Response:
    key = uuid_value(node_id, "NodeID")
    result = write(lambda s: purge_node(s, key))
    # Nomad's NodeUpdateResponse, as Node.Deregister fills it.
    return respond(
        {
            "HeartbeatTTL": 0,
            "EvalIDs": [str(e) for e in result.eval_ids] or None,
            "EvalCreateIndex": result.index if result.eval_ids else 0,
            "NodeModifyIndex": result.index,
            "Features": 0,
            "LeaderRPCAddr": "",
            "NumNodes": 0,
            "Servers": None,
            "SchedulingEligibility": "",
            "SignedIdentity": None,
            "Index": result.index,
            "LastContact": 0,
            "KnownLeader": True,
        },
        result.index,
    )
