"""/v1/allocations and /v1/allocation/:id."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response

from app.api import encode
from app.api.context import read, respond
from app.api.params import id_prefix_arg, namespace, no_filter, uuid_value
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
