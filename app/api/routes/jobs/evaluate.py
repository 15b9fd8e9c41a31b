"""PUT/POST /v1/job/:id/evaluate and /v1/node/:id/evaluate (Nomad's `job eval`, `node eval`),
and the 404 for a /v1/job/:id/<sub-route> corral does not have."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from app.api.encoders import job_encode
from app.api.http.context import respond, state, write
from app.api.http.params import json_body, namespace, peek_json_body, uuid_value
from app.models import Job
from app.store.evaluation.evaluate import evaluate_job, evaluate_node
from app.values.errors import InvalidInput, NotFound

bp = Blueprint("evaluate", __name__)


@bp.route("/job/<path:job_id>/evaluate", methods=["PUT", "POST"])
def job_evaluate(job_id: str) -> Response:
    """An empty body, or Nomad's JobEvaluateRequest: {JobID, EvalOptions: {ForceReschedule}}."""
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    force = False
    if request.get_data(cache=True).strip():
        body = json_body()
        if body.get("JobID") not in (None, "", job_id):
            raise InvalidInput.of("JobID", f"{body['JobID']!r} does not match the job ID in the URL ({job_id!r})")
        options = body.get("EvalOptions")
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise InvalidInput.of("EvalOptions", "must be a JSON object")
        chosen = options.get("ForceReschedule", False)
        if not isinstance(chosen, bool):
            raise InvalidInput.of("EvalOptions.ForceReschedule", "must be a boolean")
        force = chosen
    result = write(lambda s: evaluate_job(s, ns, job_id, force_reschedule=force))
    return respond(job_encode.job_eval_answer(result), result.index)


@bp.route("/node/<node_id>/evaluate", methods=["PUT", "POST"])
def node_evaluate(node_id: str) -> Response:
    key = uuid_value(node_id, "NodeID")
    result = write(lambda s: evaluate_node(s, key))
    return respond(
        {
            "EvalIDs": [str(e) for e in result.eval_ids],
            "EvalCreateIndex": result.index if result.eval_ids else 0,
            "NodeModifyIndex": result.node_modify_index,
            "Index": result.index,
        },
        result.index,
    )


def refuse_unknown_subroute(job_id: str, method: str) -> None:
    """The job routes take the rest of the path as the job ID, so /v1/job/web/services would
    read as job 'web/services'. When no such job exists but 'web' does, the caller meant a
    sub-route corral does not have: 404 naming the route, not 'job not found'."""
    parent, slash, sub = job_id.rpartition("/")
    if not slash or not parent or _registers(job_id):
        return
    ns = namespace(allow_wildcard=False)
    with state().reads() as session, session.begin():
        exists: Any = session.get(Job, (ns, job_id))
        if exists is not None and exists.purged_at is None:
            return
        owner: Any = session.get(Job, (ns, parent))
        if owner is None or owner.purged_at is not None:
            return
    raise NotFound.of("URL", f"no route {method} /v1/job/<id>/{sub} in corral (job {parent!r} exists)")


def _registers(job_id: str) -> bool:
    """A write whose body registers the job the whole path names (a new job 'team/web' while
    job 'team' exists) is a registration, not a sub-route."""
    if request.method not in ("PUT", "POST"):
        return False
    body = peek_json_body()
    job = body.get("Job") if isinstance(body, dict) else None
    return isinstance(job, dict) and job.get("ID") == job_id
