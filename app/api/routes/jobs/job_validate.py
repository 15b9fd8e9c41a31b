"""POST|PUT /v1/validate/job: Nomad's job validation, without registering anything."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.http.context import respond
from app.api.http.params import json_body
from app.api.routes.jobs.jobs import normalized_job
from app.jobspec.warnings import format_warnings, job_warnings
from app.values.errors import InvalidInput

bp = Blueprint("job_validate", __name__)


@bp.route("/validate/job", methods=["PUT", "POST"])
def validate() -> Response:
    """Nomad's JobValidateResponse: 200 whether or not the job is valid; the problems are in
    ValidationErrors (one "field: message" each) and Error (all of them, joined)."""
    body = json_body()
    job = body.get("Job")
    if not isinstance(job, dict):
        raise InvalidInput.of("Job", "is required and must be a JSON object")
    try:
        spec = normalized_job(body)
    except InvalidInput as err:
        errors = [f"{problem.field}: {problem.message}" for problem in err.problems]
        return respond(
            {
                "DriverConfigValidated": False,
                "ValidationErrors": errors,
                "Error": "; ".join(errors),
                "Warnings": format_warnings(job_warnings(job)),
            },
            0,
        )
    return respond(
        {
            "DriverConfigValidated": False,
            "ValidationErrors": [],
            "Error": "",
            "Warnings": format_warnings(job_warnings(spec)),
        },
        0,
    )
