"""/v1/job/:id/scale: Nomad's JobScaleStatus (GET) and Job.Scale (POST)."""

from __future__ import annotations

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.encoders import encode, job_encode
from app.api.http.context import read, respond, state, write
from app.api.http.params import json_body, namespace
from app.models import JobScalingEvent
from app.store.job import job_scale as store
from app.values.errors import FieldProblem, InvalidInput
from app.wire.api.api_jobs import JobScaleStatusJson, ScalingEventJson
from app.wire.json import JsonObject

bp = Blueprint("job_scale", __name__)


@bp.get("/job/<path:job_id>/scale")
def scale_status(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None

    def fetch(session: Session) -> JobScaleStatusJson:
        job, groups = store.scale_status(session, ns, job_id)
        return {
            "JobID": job.id,
            "Namespace": job.namespace,
            "JobCreateIndex": job.create_index,
            "JobModifyIndex": job.job_modify_index,
            "JobStopped": job.stop,
            "TaskGroups": {
                name: {
                    "Desired": g.desired,
                    "Placed": g.placed,
                    "Running": g.running,
                    "Healthy": g.healthy,
                    "Unhealthy": g.unhealthy,
                    "Events": [_event(e) for e in g.events],
                }
                for name, g in groups.items()
            },
        }

    body, index = read(["jobs", "allocations", "deployments"], fetch)
    return respond(body, index)


def _event(row: JobScalingEvent) -> ScalingEventJson:
    return {
        "Time": encode.nanos(row.recorded_at),
        "Count": row.count,
        "PreviousCount": row.previous_count,
        "Message": row.message,
        "Error": row.error,
        "Meta": row.meta,
        "EvalID": encode.ident(row.eval_id) if row.eval_id is not None else None,
        "CreateIndex": row.create_index,
    }


@bp.route("/job/<path:job_id>/scale", methods=["PUT", "POST"])
def scale(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    request = _scale_request(json_body())
    result = write(lambda session: store.scale_job(session, ns, job_id, request))
    return respond(job_encode.job_eval_answer(result), result.index)


def _scale_request(body: JsonObject) -> store.ScaleRequest:
    problems: list[FieldProblem] = []
    target = body.get("Target")
    group = target.get("Group") if isinstance(target, dict) else None
    if not isinstance(group, str) or not group:
        problems.append(FieldProblem("Target.Group", "is required: the task group to scale"))
    count = body.get("Count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        problems.append(FieldProblem("Count", "must be an integer"))
        count = 0
    message = body.get("Message") or ""
    if not isinstance(message, str):
        problems.append(FieldProblem("Message", "must be a string"))
        message = ""
    error = body.get("Error", False)
    if not isinstance(error, bool):
        problems.append(FieldProblem("Error", "must be a boolean"))
        error = False
    meta = body.get("Meta")
    if meta is not None and not isinstance(meta, dict):
        problems.append(FieldProblem("Meta", "must be an object"))
        meta = None
    if not isinstance(body.get("PolicyOverride", False), bool):
        problems.append(FieldProblem("PolicyOverride", "must be a boolean"))
    if error is True and count is not None:
        problems.append(FieldProblem("Count", "must not be given when Error is true"))
    if count is None and error is not True:
        problems.append(FieldProblem("Count", "is required unless the event reports an Error"))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(group, str)
    return store.ScaleRequest(
        group=group,
        count=count,
        message=message,
        error=error,
        meta=meta,
        max_versions=state().settings.job_max_versions,
    )
