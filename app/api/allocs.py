"""/v1/allocations, /v1/allocation/:id and /v1/allocation/:id/stop."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response

from app.api import encode
from app.api.context import read, respond, write
from app.api.params import bool_arg, id_prefix_arg, namespace, no_filter, uuid_value
from app.models import JobVersion
from app.store import allocs as store

bp = Blueprint("allocs", __name__)


@bp.get("/allocations")
def list_allocations() -> Response:
    no_filter()
    ns, prefix = namespace(allow_wildcard=True), id_prefix_arg()
    body, index = read(["allocations"], lambda s: [encode.allocation(a) for a in store.list_allocations(s, ns, prefix)])
    return respond(body, index)


@bp.get("/allocation/<alloc_id>")
def get_allocation(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")

    def fetch(session: Any) -> dict[str, Any]:
        alloc = store.get_allocation(session, key)
        version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
        return encode.allocation(alloc, job_spec=None if version is None else version.spec)

    body, index = read(["allocations"], fetch)
    return respond(body, index)


@bp.route("/allocation/<alloc_id>/stop", methods=["PUT", "POST"])
def stop_allocation(alloc_id: str) -> Response:
    """Nomad's alloc stop: the allocation is marked to migrate and an alloc-stop evaluation
    stops it and places a replacement. `no_shutdown_delay` is accepted and ignored."""
    key = uuid_value(alloc_id, "AllocID")
    bool_arg("no_shutdown_delay")
    eval_id, index = write(lambda s: store.stop_allocation(s, key))
    return respond({"EvalID": encode.ident(eval_id), "Index": index}, index)
