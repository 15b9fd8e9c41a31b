"""The validation pipeline: decode the payload, fill in defaults, apply every rule."""

from __future__ import annotations

from typing import cast

from app.jobspec.canonical import job_update_as_sent
from app.jobspec.decode import decode_job
from app.jobspec.defaults import apply_defaults
from app.jobspec.errors import JobSpecError, is_within
from app.jobspec.rules.validate import check_job
from app.jobspec.unknown_keys import unknown_keys
from app.wire.job import JobSpec

_TYPE_PATH = "Job.Type"


def normalize_job(payload: object) -> JobSpec:
    """Validate a Nomad API job object (the value of "Job" in a register request body)
    and return a canonical copy with Nomad's defaults filled in.

    Raises JobSpecError listing every problem found, not just the first, keys that are
    no field of Nomad's job structs included. Fields of blocks corral keeps without
    reading (services, templates...) are passed through untouched.
    """
    unknown = unknown_keys(payload)
    decoded = decode_job(job_update_as_sent(payload))
    if decoded.job is None:
        raise JobSpecError(unknown + decoded.errors)
    job = apply_defaults(decoded.job)
    rule_errors = [
        error
        for error in check_job(job, type_trusted=_TYPE_PATH not in decoded.discarded)
        if not any(is_within(error.field, removed) for removed in decoded.discarded)
    ]
    errors = unknown + decoded.errors + rule_errors
    if errors:
        raise JobSpecError(errors)
    # The pydantic model checked every field it declares; the rest pass through as sent.
    return cast(JobSpec, job.model_dump(by_alias=True))
