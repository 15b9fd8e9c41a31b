"""/v1/job/:id/periodic/force and /v1/job/:id/dispatch: launching children of periodic and
parameterized jobs, each child committed with its evaluation."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from flask import Blueprint, Response

from app.api.context import respond, write
from app.api.params import namespace, optional_json_body
from app.errors import FieldProblem, InvalidInput
from app.jobspec.errors import json_type
from app.store import dispatch as dispatch_store
from app.store import periodic as periodic_store

bp = Blueprint("periodic", __name__)


@bp.route("/job/<path:job_id>/periodic/force", methods=["PUT", "POST"])
def force(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    launch = write(lambda session: periodic_store.force_launch(session, ns, job_id))
    return respond(
        {"EvalID": str(launch.eval_id), "EvalCreateIndex": launch.index, "Index": launch.index}, launch.index
    )


@bp.route("/job/<path:job_id>/dispatch", methods=["PUT", "POST"])
def dispatch(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    body = optional_json_body()
    payload, meta = _payload(body.get("Payload")), _meta(body.get("Meta"))
    result = write(lambda session: dispatch_store.dispatch_job(session, ns, job_id, payload, meta))
    return respond(
        {
            "DispatchedJobID": result.child_id,
            "EvalID": str(result.eval_id),
            "EvalCreateIndex": result.eval_create_index,
            "JobCreateIndex": result.job_create_index,
            "Index": result.index,
        },
        result.index,
    )


def _payload(value: Any) -> bytes:
    """Payload is base64, as Go encodes a []byte."""
    if value is None or value == "":
        return b""
    if not isinstance(value, str):
        raise InvalidInput.of("Payload", f"must be a base64 string, got {json_type(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput.of("Payload", "must be valid base64") from None


def _meta(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput.of("Meta", f"must be an object of strings, got {json_type(value)}")
    problems = [
        FieldProblem(f"Meta.{key}", f"must be a string, got {json_type(v)}")
        for key, v in value.items()
        if not isinstance(v, str)
    ]
    if problems:
        raise InvalidInput(problems)
    return dict(value)
