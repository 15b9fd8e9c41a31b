"""/v1/job/:id/revert and /v1/job/:id/stable (Nomad's Job.Revert and Job.Stable)."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.encoders import job_encode
from app.api.http.context import respond, state, write
from app.api.http.params import json_body, namespace
from app.store.job import job_versions as store
from app.store.job.jobs import RegisterOptions
from app.values.errors import FieldProblem, InvalidInput
from app.wire.json import JsonObject

bp = Blueprint("job_versions", __name__)


def _version_field(body: JsonObject, name: str, problems: list[FieldProblem], *, required: bool) -> int | None:
    value = body.get(name)
    if value is None:
        if required:
            problems.append(FieldProblem(name, "is required"))
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(FieldProblem(name, "must be a non-negative integer"))
        return None
    return value


@bp.route("/job/<path:job_id>/revert", methods=["PUT", "POST"])
def revert(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    body = json_body()
    problems: list[FieldProblem] = []
    version = _version_field(body, "JobVersion", problems, required=True)
    prior = _version_field(body, "EnforcePriorVersion", problems, required=False)
    if problems:
        raise InvalidInput(problems)
    assert version is not None
    options = RegisterOptions(max_versions=state().settings.job_max_versions)
    result = write(lambda s: store.revert_job(s, ns, job_id, version, prior, options))
    return respond(job_encode.job_eval_answer(result), result.index)


@bp.route("/job/<path:job_id>/stable", methods=["PUT", "POST"])
def stable(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    body = json_body()
    problems: list[FieldProblem] = []
    version = _version_field(body, "JobVersion", problems, required=True)
    flag = body.get("Stable")
    if not isinstance(flag, bool):
        problems.append(FieldProblem("Stable", "is required and must be a boolean"))
    if problems:
        raise InvalidInput(problems)
    assert version is not None and isinstance(flag, bool)
    index = write(lambda s: store.set_stable(s, ns, job_id, version, flag))
    return respond({"JobModifyIndex": index, "Index": index}, index)
