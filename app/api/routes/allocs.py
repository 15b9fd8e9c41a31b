"""/v1/allocations, /v1/allocation/:id and /v1/allocation/:id/stop."""

from __future__ import annotations

from collections.abc import Sequence

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.encoders import encode
from app.api.http.context import read, respond, write
from app.api.http.listing import Entry, Order, as_is, list_query, page, with_token
from app.api.http.params import bool_arg, id_prefix_arg, namespace, uuid_value
from app.models import Allocation, JobVersion
from app.store import allocs as store
from app.store.job import job_reads
from app.wire.allocation import AllocationJson
from app.wire.api.api_allocs import AllocationListedJson

bp = Blueprint("allocs", __name__)


@bp.get("/allocations")
def list_allocations() -> Response:
    """By CreateIndex and ID, or by ID with ?prefix (Nomad's indexes); filter, per_page,
    next_token and reverse as Nomad. ?task_states=false leaves TaskStates out (null), as Nomad's
    stub fields do; ?resources=true is accepted: corral's rows always carry AllocatedResources."""
    ns, prefix, query = namespace(allow_wildcard=True), id_prefix_arg(), list_query()
    bool_arg("resources")  # validated only (a bad value is a 400, as in Nomad)
    task_states = bool_arg("task_states", default=True)
    order = Order.ID if prefix else Order.CREATE_INDEX_ID

    def fetch(session: Session) -> tuple[list[AllocationListedJson], str | None]:
        rows = store.list_allocations(session, ns, prefix)
        bodies = zip(rows, listed(session, rows, task_states=task_states), strict=True)
        return page((Entry(a.namespace, str(a.id), a.create_index, as_is(b), b) for a, b in bodies), order, query)

    (body, token), index = read(["allocations"], fetch)
    return with_token(respond(body, index), token)


def listed(session: Session, rows: Sequence[Allocation], *, task_states: bool = True) -> list[AllocationListedJson]:
    """Allocations as lists show them; their jobs' types read in one statement (a query per
    allocation was most of a big list's time: the ORM's identity map holds a job only while
    something refers to it, so it was read again for every allocation)."""
    types = job_reads.job_types(session, ((a.namespace, a.job_id) for a in rows))
    out = [encode.allocation_listed(a, types.get((a.namespace, a.job_id), "")) for a in rows]
    if not task_states:
        for body in out:
            body["TaskStates"] = None
    return out


@bp.get("/allocation/<alloc_id>")
def get_allocation(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")

    def fetch(session: Session) -> AllocationJson:
        alloc = store.get_allocation(session, key)
        version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
        spec = None if version is None else encode.version_spec(version)
        return encode.allocation(alloc, spec, store.placement_metrics_texts(session, [key]).get(key))

    body, index = read(["allocations"], fetch)
    return respond(body, index)


@bp.route("/allocation/<alloc_id>/stop", methods=["PUT", "POST"])
def stop_allocation(alloc_id: str) -> Response:
    """Nomad's alloc stop: the allocation is marked to migrate and an alloc-stop evaluation
    stops it and places a replacement. `no_shutdown_delay`: its client skips the shutdown_delay."""
    key = uuid_value(alloc_id, "AllocID")
    no_delay = bool_arg("no_shutdown_delay")
    eval_id, index = write(lambda s: store.stop_allocation(s, key, no_delay))
    return respond({"EvalID": encode.ident(eval_id), "Index": index}, index)
