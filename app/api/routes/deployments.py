"""/v1/deployments, /v1/deployment/... and a job's deployments, as Nomad's Deployment and Job
endpoints: list, read, allocations, promote, pause/resume and fail."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from flask import Blueprint, Response, request
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from app.api.encoders import deployment_encode
from app.api.http.context import read, respond, state, write
from app.api.http.listing import Entry, Order, as_is, filtered, list_query, page, predicate_arg, with_token
from app.api.http.params import bool_arg, id_prefix_arg, json_body, namespace, uuid_value
from app.api.http.validation import validate
from app.api.routes.allocs import listed
from app.models import Deployment
from app.store.deployment import deployment_reads as reads
from app.store.deployment import deployments as store
from app.store.job.jobs import RegisterOptions
from app.values.errors import InvalidInput
from app.wire.deployment import DeploymentJson

bp = Blueprint("deployments", __name__)
# Every read depends on the deployment rows and on the allocations its counts come from.
TABLES = ["deployments", "allocations"]


def _encode_all(session: Session, rows: Sequence[Deployment]) -> list[DeploymentJson]:
    counts = store.group_counts(session, [d.id for d in rows])
    return [deployment_encode.deployment(d, counts) for d in rows]


@bp.get("/deployments")
def list_deployments() -> Response:
    """As Nomad: oldest first by CreateIndex and ID (by ID with ?prefix); reverse=true for newest
    first. `ascending`, the parameter of Nomad 1.2, is accepted and is the default order."""
    ns, prefix, query = namespace(allow_wildcard=True), id_prefix_arg(), list_query()
    bool_arg("ascending")
    order = Order.ID if prefix else Order.CREATE_INDEX_ID

    def fetch(session: Session) -> tuple[list[DeploymentJson], str | None]:
        rows = reads.list_deployments(session, ns, prefix, ascending=True)
        entries = [
            Entry(d.namespace, str(d.id), d.create_index, as_is(body), body)
            for d, body in zip(rows, _encode_all(session, rows), strict=True)
        ]
        return page(entries, order, query)

    (body, token), index = read(TABLES, fetch)
    return with_token(respond(body, index), token)


@bp.get("/deployment/<deployment_id>")
def get_deployment(deployment_id: str) -> Response:
    key = uuid_value(deployment_id, "DeploymentID")
    body, index = read(TABLES, lambda s: _encode_all(s, [store.get_row(s, key)])[0])
    return respond(body, index)


@bp.get("/deployment/allocations/<deployment_id>")
def deployment_allocations(deployment_id: str) -> Response:
    """As Nomad: the allocations of the deployment, an empty list for an unknown one."""
    key = uuid_value(deployment_id, "DeploymentID")
    body, index = read(TABLES, lambda s: listed(s, reads.deployment_allocations(s, key)))
    return respond(body, index)


@bp.get("/job/<path:job_id>/deployments")
def job_deployments(job_id: str) -> Response:
    """Newest first; `?all=true` includes those of an earlier job that had the same ID."""
    ns, include_all, predicate = namespace(allow_wildcard=False), bool_arg("all"), predicate_arg()
    assert ns is not None
    body, index = read(
        [*TABLES, "jobs"],
        lambda s: filtered(
            predicate, _encode_all(s, reads.job_deployments(s, ns, job_id, include_all=include_all)), lambda d: d
        ),
    )
    return respond(body, index)


@bp.get("/job/<path:job_id>/deployment")
def job_latest_deployment(job_id: str) -> Response:
    """The job's latest deployment, or JSON null when it has none (as Nomad)."""
    ns = namespace(allow_wildcard=False)
    assert ns is not None

    def fetch(session: Session) -> DeploymentJson | None:
        row = reads.latest_deployment(session, ns, job_id)
        return None if row is None else _encode_all(session, [row])[0]

    body, index = read(TABLES, fetch)
    return respond(body, index)


# --- writes ------------------------------------------------------------------------------


class _Strict(BaseModel):
    # Nomad's API client embeds its WriteRequest (Region, Namespace, ...) in these bodies.
    model_config = ConfigDict(extra="ignore", strict=True)


class PromoteBody(_Strict):
    DeploymentID: str = ""
    All: bool = False
    Groups: list[str] | None = None


class PauseBody(_Strict):
    DeploymentID: str = ""
    Pause: bool


class FailBody(_Strict):
    DeploymentID: str = ""


class AllocHealthBody(_Strict):
    DeploymentID: str = ""
    HealthyAllocationIDs: list[str] | None = None
    UnhealthyAllocationIDs: list[str] | None = None


def _check_id(given: str, key: uuid.UUID) -> None:
    """A DeploymentID in the body must name the deployment in the URL."""
    if not given:
        return
    try:
        same = uuid.UUID(given) == key
    except ValueError:
        same = False
    if not same:
        raise InvalidInput.of("DeploymentID", f"{given!r} does not match the deployment ID in the URL ({key})")


def _update(change: Callable[[Session], store.Change]) -> Response:
    result = write(change)
    return respond(deployment_encode.update_response(result), result.index)


@bp.route("/deployment/promote/<deployment_id>", methods=["PUT", "POST"])
def promote(deployment_id: str) -> Response:
    """{All: true} promotes every group with canaries; otherwise {Groups: [...]} names them."""
    key = uuid_value(deployment_id, "DeploymentID")
    body = validate(PromoteBody, json_body(), "")
    _check_id(body.DeploymentID, key)
    groups: list[str] | None = None
    if not body.All:
        if not body.Groups:
            raise InvalidInput.of("Groups", "name at least one task group to promote, or set All to true")
        if any(not g for g in body.Groups):
            raise InvalidInput.of("Groups", "task group names must not be empty")
        groups = list(dict.fromkeys(body.Groups))
    return _update(lambda s: store.promote(s, key, groups))


@bp.route("/deployment/pause/<deployment_id>", methods=["PUT", "POST"])
def pause(deployment_id: str) -> Response:
    """{Pause: true} pauses a deployment; {Pause: false} resumes it (with a deployment-watcher
    evaluation, so the scheduler carries on with the rollout)."""
    key = uuid_value(deployment_id, "DeploymentID")
    body = validate(PauseBody, json_body(), "")
    _check_id(body.DeploymentID, key)
    return _update(lambda s: store.set_paused(s, key, body.Pause))


@bp.route("/deployment/fail/<deployment_id>", methods=["PUT", "POST"])
def fail(deployment_id: str) -> Response:
    """Mark the deployment failed; with auto_revert, the latest stable version is registered
    again (RevertedJobVersion). The body is optional, as Nomad ignores it."""
    key = uuid_value(deployment_id, "DeploymentID")
    if request.get_data(cache=True).strip():
        _check_id(validate(FailBody, json_body(), "").DeploymentID, key)
    options = RegisterOptions(max_versions=state().settings.job_max_versions)
    return _update(lambda s: store.fail(s, key, options))


@bp.route("/deployment/allocation-health/<deployment_id>", methods=["PUT", "POST"])
def allocation_health(deployment_id: str) -> Response:
    """Set the health of allocations of a running deployment by hand (Nomad's SetAllocHealth:
    the way `health_check = "manual"` groups make progress); with a deployment-watcher evaluation."""
    key = uuid_value(deployment_id, "DeploymentID")
    body = validate(AllocHealthBody, json_body(), "")
    _check_id(body.DeploymentID, key)
    healthy = [uuid_value(a, f"HealthyAllocationIDs[{i}]") for i, a in enumerate(body.HealthyAllocationIDs or [])]
    unhealthy = [uuid_value(a, f"UnhealthyAllocationIDs[{i}]") for i, a in enumerate(body.UnhealthyAllocationIDs or [])]
    if not healthy and not unhealthy:
        raise InvalidInput.of("HealthyAllocationIDs", "name at least one allocation, healthy or unhealthy")
    both = set(healthy) & set(unhealthy)
    if both:
        first = sorted(map(str, both))[0]
        raise InvalidInput.of("UnhealthyAllocationIDs", f"allocation {first} is also listed healthy")
    return _update(lambda s: store.set_alloc_health(s, key, healthy, unhealthy))
