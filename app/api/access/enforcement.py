"""Applying the route table: a before_request hook checks each request against the requirement
its endpoint declares (refusing a route missing from the table), and an after_request step
refuses a cross-namespace list built without the caller's visibility (app/api/access/visibility.py)
and narrows the namespace list to the token's namespaces. A refusal answers 403 with Nomad's
body, "Permission denied", and is logged with the token's AccessorID, never its secret. With
ACLs off nothing here runs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import structlog
from flask import Flask, Response, g, request
from sqlalchemy import select

from app.acl import policy as pol
from app.api.access import node_secrets
from app.api.access.callers import Denied, caller, resolve_caller
from app.api.access.requirements import (
    Area,
    InNamespace,
    InNodePool,
    ListIn,
    Management,
    NodeIntroduction,
    NodeSecret,
    OwnFilter,
    Public,
    Requirement,
    ServiceRead,
    VariableOp,
)
from app.api.access.visibility import Visibility, own_workload_namespace
from app.api.http import ws_handshake
from app.api.http.context import state
from app.api.http.params import peek_json_body
from app.models import Allocation, Deployment, Evaluation
from app.store.evaluation.evals import CORE

log = structlog.get_logger(__name__)
DEFAULT_NAMESPACE = "default"
UNFILTERED_LIST = "list built without the caller's namespace visibility"
# WebSocket routes that take Nomad's ?ws_handshake=true (the token in the first frame).
HANDSHAKE_ENDPOINTS = frozenset({"client_exec.alloc_exec"})


def install(app: Flask, requirements: Mapping[str, Requirement]) -> None:
    """Check every request of `app` against `requirements` (endpoint -> requirement)."""

    def enforce() -> Response | None:
        return _enforce(requirements)

    app.before_request(enforce)
    app.after_request(_filter_lists)


def _enforce(requirements: Mapping[str, Requirement]) -> Response | None:
    settings = state().settings
    if not settings.acl_enabled:
        return None
    endpoint = request.endpoint or ""
    requirement = requirements.get(endpoint)
    try:
        if requirement is None:
            if request.url_rule is None:
                return None  # 404/405: Flask answers it
            raise Denied()  # fail closed; tests/unit/test_acl_routes.py catches the omission
        if endpoint in HANDSHAKE_ENDPOINTS and ws_handshake.requested(request.args.get("ws_handshake")):
            # The token arrives in the first WebSocket frame: the route checks the same
            # requirement once it has read it (check_after_handshake).
            g.corral_handshake_requirement = requirement
            return None
        _check(requirement)
    except Denied as denied:
        _log_denied(denied, endpoint)
        return Response(denied.message, status=403, content_type="text/plain; charset=utf-8")
    return None


def check_after_handshake(token: str) -> None:
    """The deferred check of a WebSocket route opened with ?ws_handshake=true, as the token of
    its handshake frame; raises Denied (logged as every refusal is). With ACLs off: nothing."""
    g.corral_handshake_token = token
    requirement: Requirement | None = g.get("corral_handshake_requirement")
    if not state().settings.acl_enabled:
        return
    try:
        if requirement is None:
            raise Denied()  # fail closed: the route was reached without its check deferred
        _check(requirement)
    except Denied as denied:
        _log_denied(denied, request.endpoint or "")
        raise


def _log_denied(denied: Denied, endpoint: str) -> None:
    log.warning(
        "permission denied",
        accessor=g.get("corral_accessor", "unknown"),
        method=request.method,
        path=request.path,
        endpoint=endpoint,
        reason=denied.message,
    )


def _check(requirement: Requirement) -> None:
    if isinstance(requirement, Public):
        return
    if isinstance(requirement, NodeSecret):
        g.corral_client_lane = True
        node_secrets.check_node_secret()
        return
    if isinstance(requirement, NodeIntroduction):
        g.corral_client_lane = True
        if node_secrets.known_node_reregisters():
            return
        requirement = Area("node", pol.WRITE)
    node_may = isinstance(requirement, InNamespace) and requirement.node_may
    if node_may and node_secrets.node_owns_allocation(_path_uuid("alloc_id")):
        return
    found = resolve_caller()
    g.corral_caller = found
    g.corral_accessor = found.accessor
    acl = found.acl
    if isinstance(requirement, Management):
        if not acl.management:
            raise Denied()
    elif isinstance(requirement, Area):
        if not acl.allow(requirement.area, requirement.level):
            raise Denied()
    elif isinstance(requirement, InNamespace):
        namespace = _namespace_of(requirement.source)
        if namespace is not None and not acl.allow_namespace_op(namespace, requirement.capability):
            raise Denied()
    elif isinstance(requirement, ServiceRead):
        if not acl.allow_service_read(request.args.get("namespace") or DEFAULT_NAMESPACE):
            raise Denied()
    elif isinstance(requirement, InNodePool):
        if requirement.node_read and not acl.allow("node", pol.READ):
            raise Denied()
        if not acl.allow_node_pool_op(_pool_of(requirement.source), requirement.capability):
            raise Denied()
    elif isinstance(requirement, VariableOp):
        path = str((request.view_args or {}).get("var_path", ""))
        if not acl.allow_variable_op(_variable_namespace(), path, requirement.capability):
            raise Denied()
    elif isinstance(requirement, ListIn):
        wanted = request.args.get("namespace") or DEFAULT_NAMESPACE
        own = requirement.workload_may and acl.workload is not None and acl.workload.namespace == wanted
        if wanted != "*" and not own and not acl.allow_namespace_op(wanted, requirement.capability):
            raise Denied()
        g.corral_list_capability = requirement.capability
        g.corral_list_workload = requirement.workload_may
    elif isinstance(requirement, OwnFilter) and request.endpoint == "namespaces.list_namespaces":
        g.corral_list_namespaces = True


def _pool_of(source: str) -> str:
    """The node pool a request acts on: the path's, or the body's Name (a body that is not a
    JSON object names none: the route refuses it)."""
    if source == "path":
        return str((request.view_args or {}).get("name", ""))
    body = peek_json_body()
    return str(body.get("Name", "")) if isinstance(body, dict) else ""


def _variable_namespace() -> str:
    """The namespace a variable route acts in: the body's Namespace when it names one (as
    Nomad's Variables.Apply takes it), else ?namespace=."""
    body = peek_json_body() if request.method in ("PUT", "POST") else None
    named = body.get("Namespace") if isinstance(body, dict) else None
    return named if isinstance(named, str) and named else request.args.get("namespace") or DEFAULT_NAMESPACE


_OBJECTS: dict[str, tuple[Any, str]] = {
    "allocation": (Allocation, "alloc_id"),
    "evaluation": (Evaluation, "eval_id"),
    "deployment": (Deployment, "deployment_id"),
}


def _namespace_of(source: str) -> str | None:
    """The namespace the request acts in; None when the object does not exist (the route 404s)."""
    if source == "query":
        return request.args.get("namespace") or DEFAULT_NAMESPACE
    if source == "job":
        # Read as json_body() does (Nomad's Go client sends no Content-Type): the namespace
        # checked must be the one the route will write to.
        body = peek_json_body()  # None: the route refuses the body with a 400 naming the problem
        job = body.get("Job") if isinstance(body, dict) else None
        named = job.get("Namespace") if isinstance(job, dict) else None
        return named if isinstance(named, str) and named else request.args.get("namespace") or DEFAULT_NAMESPACE
    model, key = _OBJECTS[source]
    object_id = _path_uuid(key)
    if object_id is None:
        return None
    with state().reads() as session, session.begin():
        row = session.execute(select(model.id, model.namespace).where(model.id == object_id)).first()
    if row is None:
        return None
    # A core (GC) evaluation has no namespace: it is checked as Nomad's "-", which only a
    # management token (or a policy naming "-") may read.
    return str(row.namespace) if row.namespace is not None else CORE


def _path_uuid(key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str((request.view_args or {}).get(key, "")))
    except ValueError:
        return None


def _filter_lists(response: Response) -> Response:
    if response.status_code != 200:
        return response
    capability = g.get("corral_list_capability")
    if capability:
        return _check_list(response, capability)
    if g.get("corral_list_namespaces", False):
        return _narrow_namespaces(response)
    return response


def _check_list(response: Response, capability: str) -> Response:
    """A ListIn list must be built seeing only what the caller may read: the paginator skips the
    rest before paging and filtering (app/api/access/visibility.py). Stripping items from the finished
    page instead would leave its X-Nomad-NextToken and its filter's answers naming hidden
    objects, so a list that did not take its visibility, or that holds a hidden item anyway, is
    refused rather than answered (defence in depth; tests/unit/test_list_visibility.py)."""
    if not g.get("corral_list_visibility_taken", False):
        return _unfiltered("the list did not take the caller's visibility")
    acl = caller().acl
    if acl.management or not response.is_json:
        return response
    items = response.get_json()
    if isinstance(items, list):
        visibility = Visibility(acl, capability, own_workload_namespace(acl))
        readable = (isinstance(i, dict) and visibility.allows(_listed_namespace(i)) for i in items)
        if not all(readable):
            return _unfiltered("the list holds items of namespaces the caller may not read")
    return response


def _listed_namespace(item: dict[str, object]) -> str:
    """A listed object's namespace: its own, or its Target's (Nomad's scaling policy stubs)."""
    target = item.get("Target")
    if "Namespace" not in item and isinstance(target, dict):
        return str(target.get("Namespace"))
    return str(item.get("Namespace"))


def _unfiltered(reason: str) -> Response:
    log.error("list refused: built without the caller's visibility", reason=reason, endpoint=request.endpoint)
    return Response(UNFILTERED_LIST, status=500, content_type="text/plain; charset=utf-8")


def _narrow_namespaces(response: Response) -> Response:
    """The namespace list (never paged): the namespaces the token may use."""
    acl = caller().acl
    if acl.management or not response.is_json:
        return response
    items = response.get_json()
    if not isinstance(items, list):
        return response
    kept = [i for i in items if isinstance(i, dict) and acl.allow_namespace(str(i.get("Name")))]
    response.set_data(json.dumps(kept))
    return response
