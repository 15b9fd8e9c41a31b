"""GET /v1/operator/activity: placements and evaluations per minute over a recent window, for
the web UI's cluster chart. A corral extension (Nomad has no such route); read-only."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.http.context import read, respond
from app.api.http.params import integer_arg
from app.store import activity as store

bp = Blueprint("activity", __name__)
DEFAULT_MINUTES = 60
MAX_MINUTES = 1440  # a day of one-minute buckets


@bp.get("/operator/activity")
def activity() -> Response:
    minutes = integer_arg("minutes", minimum=1, maximum=MAX_MINUTES) or DEFAULT_MINUTES
    buckets, index = read(
        ["allocations", "evaluations"],
        lambda s: [
            {"Minute": b.minute, "Placements": b.placements, "Evaluations": b.evaluations}
            for b in store.per_minute(s, minutes)
        ],
    )
    return respond(buckets, index)
