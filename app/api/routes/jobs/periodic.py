"""/v1/job/:id/periodic/force, /v1/job/:id/dispatch and /v1/job/:id/dispatch/payload (the
payload as the raw request body): launching children of periodic and parameterized jobs, each
child committed with its evaluation."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from flask import Blueprint, Response, request

from app.api.encoders.encode import ident
from app.api.http.context import respond, write
from app.api.http.params import arg, namespace, optional_json_body
from app.jobspec.errors import json_type
from app.store.job import dispatch as dispatch_store
from app.store.job import periodic as periodic_store
from app.values.errors import FieldProblem, InvalidInput
from app.wire.json import JsonObject

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
    if body.get("JobID") not in (None, "", job_id):
        raise InvalidInput.of("JobID", f"{body['JobID']!r} does not match the job ID in the URL ({job_id!r})")
    payload, meta = _payload(body.get("Payload")), _meta(body.get("Meta"))
    return _dispatched(ns, job_id, payload, meta, _options(body))


@bp.route("/job/<path:job_id>/dispatch/payload", methods=["PUT", "POST"])
def dispatch_payload(job_id: str) -> Response:
    """Nomad's raw-body dispatch: the whole body is the payload; no meta, no other field."""
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    return _dispatched(ns, job_id, request.get_data(), {}, dispatch_store.DispatchOptions(_token()))


def _dispatched(
    ns: str, job_id: str, payload: bytes, meta: dict[str, str], options: dispatch_store.DispatchOptions
) -> Response:
    result = write(lambda session: dispatch_store.dispatch_job(session, ns, job_id, payload, meta, options=options))
    return respond(
        {
            "DispatchedJobID": result.child_id,
            "EvalID": ident(result.eval_id),
            "EvalCreateIndex": result.eval_create_index,
            "JobCreateIndex": result.job_create_index,
            "Index": result.index,
        },
        result.index,
    )


def _token() -> str:
    """?idempotency_token=, where Nomad's write options carry it."""
    return arg("idempotency_token") or ""


def _options(body: JsonObject) -> dispatch_store.DispatchOptions:
    prefix, priority = body.get("IdPrefixTemplate") or "", body.get("Priority") or 0
    problems = []
    if not isinstance(prefix, str) or not all(c.isalnum() or c in "-_." for c in prefix):
        problems.append(FieldProblem("IdPrefixTemplate", "must be a string of letters, digits, '-', '_' and '.'"))
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 100:
        problems.append(FieldProblem("Priority", "must be an integer between 1 and 100 (0: the job's)"))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(prefix, str) and isinstance(priority, int)  # checked above
    return dispatch_store.DispatchOptions(_token(), prefix, priority)


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
