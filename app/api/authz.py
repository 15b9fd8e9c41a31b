"""ACL enforcement: every route declares what it needs in REQUIREMENTS, one table, and one
before_request hook applies it. A route missing from the table is refused (and a unit test
fails), so a new route cannot ship open by accident.

Tokens come in X-Nomad-Token or `Authorization: Bearer`. Without one, the `anonymous` policy
applies if it exists. A refusal answers 403 with Nomad's body, "Permission denied", and is
logged with the token's AccessorID, never its secret. Lists that span namespaces are filtered
to the namespaces the token may read (an after_request step, so blocking queries are unchanged).
With ACLs off (the default) nothing here runs, as in Nomad."""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from flask import Flask, Response, g, request
from sqlalchemy import select

from app.acl import policy as pol
from app.acl.capabilities import MANAGEMENT, Acl
from app.api.context import state
from app.ids import secret_hash
from app.models import Allocation, Deployment, Evaluation, Node
from app.store import acl as acl_store

log = structlog.get_logger(__name__)
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Public:
    """Anyone (health checks, the bootstrap, which guards itself)."""


@dataclass(frozen=True)
class Management:
    """A management token."""


@dataclass(frozen=True)
class Area:
    """node, agent or operator at read or write (Nomad's coarse policies)."""

    area: str
    level: str


@dataclass(frozen=True)
class InNamespace:
    """A namespace capability. `source` says where the namespace comes from: the ?namespace=
    parameter ('query'), the job in the body ('job'), or the object named in the path
    ('allocation', 'evaluation', 'deployment'), whose own namespace is checked."""

    capability: str
    source: str = "query"
    node_may: bool = False  # the node running the allocation may read it with its secret


@dataclass(frozen=True)
class ListIn:
    """A list that may span namespaces: allowed if the token has `capability` in the requested
    namespace (or in any, for '*'); items of other namespaces are dropped from the answer."""

    capability: str


@dataclass(frozen=True)
class NodeSecret:
    """The node named in the path, by its SecretID (or a management token)."""


@dataclass(frozen=True)
class NodeIntroduction:
    """Node registration: a token with node:write (the introduction token), or, for a node
    already registered, its own SecretID in the body (a client restarting after its
    introduction token expired)."""


@dataclass(frozen=True)
class OwnFilter:
    """Any caller; the route (or the namespace filter) narrows the answer to what the token may see."""

    what: str


Requirement = Public | Management | Area | InNamespace | ListIn | NodeSecret | NodeIntroduction | OwnFilter

R, W = pol.READ, pol.WRITE
REQUIREMENTS: dict[str, Requirement] = {
    "static": Public(),
    "agent.health": Public(),
    # The web UI's page shells and script hold no cluster data: every figure on a page comes
    # from a /v1 call made with the visitor's token and checked here like any other.
    "ui.page": Public(),
    "ui.static": Public(),
    "metrics.metrics": Public(),  # Nomad's /v1/metrics needs no token either
    # Cluster status (Nomad: none for leader, peers and regions; node:read for members).
    "status.leader": Public(),
    "status.peers": Public(),
    "status.regions": Public(),
    "status.members": Area("node", R),
    # Search answers across contexts without filtering each by the caller's capabilities yet:
    # a management token until it does, so nothing leaks.
    "search.prefix_search": Management(),
    "search.fuzzy_search": Management(),
    "agent.self_": Area("agent", R),
    # ACL objects (the bootstrap guards itself; reads filter to the token's own policies).
    "acl.bootstrap": Public(),
    "acl.list_policies": OwnFilter("the token's own policies"),
    "acl.get_policy": OwnFilter("a policy the token carries"),
    "acl.put_policy": Management(),
    "acl.delete_policy": Management(),
    "acl.list_tokens": Management(),
    "acl.create_token": Management(),
    "acl.get_token": Management(),
    "acl.update_token": Management(),
    "acl.delete_token": Management(),
    "acl.token_self": OwnFilter("the calling token"),
    # Namespaces.
    "namespaces.list_namespaces": OwnFilter("namespaces the token may use"),
    "namespaces.get_namespace": OwnFilter("a namespace the token may use"),
    "namespaces.put_namespace": Management(),
    "namespaces.delete_namespace": Management(),
    # Jobs.
    "jobs.list_jobs": ListIn(pol.LIST_JOBS),
    "jobs.register": InNamespace(pol.SUBMIT_JOB, "job"),
    "jobs.update": InNamespace(pol.SUBMIT_JOB, "job"),
    "jobs.parse": InNamespace(pol.PARSE_JOB),
    "job_validate.validate": InNamespace(pol.READ_JOB, "job"),  # Nomad: namespace:read-job
    "jobs.get_job": InNamespace(pol.READ_JOB),
    "jobs.deregister": InNamespace(pol.SUBMIT_JOB),
    "jobs.versions": InNamespace(pol.READ_JOB),
    "jobs.evaluations": InNamespace(pol.READ_JOB),
    "jobs.allocations": InNamespace(pol.READ_JOB),
    "jobs.summary": InNamespace(pol.READ_JOB),
    "job_plan.plan": InNamespace(pol.SUBMIT_JOB, "job"),
    "periodic.force": InNamespace(pol.SUBMIT_JOB),
    "periodic.dispatch": InNamespace(pol.DISPATCH_JOB),
    "job_scale.scale_status": InNamespace(pol.READ_JOB_SCALING),
    "job_scale.scale": InNamespace(pol.SCALE_JOB),
    "job_versions.revert": InNamespace(pol.SUBMIT_JOB),
    "job_versions.stable": InNamespace(pol.SUBMIT_JOB),
    "evaluate.job_evaluate": InNamespace(pol.SUBMIT_JOB),  # Nomad's job eval: submit-job
    # Deployments.
    "deployments.list_deployments": ListIn(pol.READ_JOB),
    "deployments.get_deployment": InNamespace(pol.READ_JOB, "deployment"),
    "deployments.deployment_allocations": InNamespace(pol.READ_JOB, "deployment"),
    "deployments.job_deployments": InNamespace(pol.READ_JOB),
    "deployments.job_latest_deployment": InNamespace(pol.READ_JOB),
    "deployments.promote": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.pause": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.fail": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.allocation_health": InNamespace(pol.SUBMIT_JOB, "deployment"),
    # Evaluations and allocations.
    "evals.list_evaluations": ListIn(pol.READ_JOB),
    "evals.get_evaluation": InNamespace(pol.READ_JOB, "evaluation"),
    "evals.evaluation_allocations": InNamespace(pol.READ_JOB, "evaluation"),
    "allocs.list_allocations": ListIn(pol.READ_JOB),
    "allocs.get_allocation": InNamespace(pol.READ_JOB, "allocation", node_may=True),
    "allocs.stop_allocation": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    # Nomad's client routes, proxied to the client running the allocation.
    "client_fs.logs": InNamespace(pol.READ_LOGS, "allocation"),
    "client_fs.ls": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.stat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.cat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.readat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.stream": InNamespace(pol.READ_FS, "allocation"),
    "client_allocs.alloc_stats": InNamespace(pol.READ_JOB, "allocation"),  # Nomad: read-job
    "client_allocs.restart": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    "client_allocs.signal_task": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    "client_allocs.host_stats": Area("node", R),
    "client_exec.alloc_exec": InNamespace(pol.ALLOC_EXEC, "allocation"),  # + alloc-node-exec for raw_exec, in the route
    # Nodes and the client protocol.
    "nodes.register": NodeIntroduction(),
    "nodes.list_nodes": Area("node", R),
    "nodes.get_node": Area("node", R),
    "nodes.eligibility": Area("node", W),
    "nodes.drain": Area("node", W),
    "evaluate.node_evaluate": Area("node", W),
    "nodes.node_allocations": NodeSecret(),
    "client.heartbeat": NodeSecret(),
    "client.update_allocations": NodeSecret(),
    "client.client_gc": Area("node", W),
    # Operator and system.
    "operator.get_configuration": Area("operator", R),
    "operator.put_configuration": Area("operator", W),
    "activity.activity": Area("operator", R),  # corral extension: the UI's activity chart
    "system.force_gc": Management(),
    "system.gc_runs": Area("operator", R),
    # The event stream checks each requested topic itself (Nomad's rules) and drops the events
    # of namespaces the token may not read (app/api/event_filter.py).
    "events.stream": OwnFilter("events of the topics and namespaces the token may read"),
}


class Denied(Exception):
    def __init__(self, message: str = "Permission denied") -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Caller:
    acl: Acl
    accessor: str  # "anonymous" without a token
    policies: tuple[str, ...]
    secret: str  # as presented (token self echoes it); never logged


def presented_token() -> str:
    token = request.headers.get("X-Nomad-Token", "")
    if not token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            token = value.strip()
    return token


@functools.lru_cache(maxsize=1024)
def _parsed(rules: str) -> pol.Policy:
    return pol.parse(rules)


def _compile(all_rules: list[str]) -> Acl:
    policies = []
    for rules in all_rules:
        try:
            policies.append(_parsed(rules))
        except pol.PolicyError:
            continue  # stored rules were validated when written; an unreadable one grants nothing
    return Acl.compile(policies)


def resolve_caller() -> Caller:
    secret = presented_token()
    with state().reads() as session, session.begin():
        if not secret:
            return Caller(_compile(acl_store.anonymous_rules(session)), "anonymous", ("anonymous",), "")
        found = acl_store.resolve(session, secret)
        if found is None:
            raise Denied("ACL token not found")
        token = found.token
        if token.expiration_time is not None and token.expiration_time <= datetime.now(UTC):
            g.corral_accessor = str(token.accessor_id)
            raise Denied("ACL token expired")
        acl = MANAGEMENT if token.type == "management" else _compile(found.rules)
        return Caller(acl, str(token.accessor_id), tuple(token.policies), secret)


def caller() -> Caller:
    """The resolved caller of this request (with ACLs off: management)."""
    found: Caller | None = g.get("corral_caller")
    if found is None:
        return Caller(MANAGEMENT, "", (), "")
    return found


def install(app: Flask) -> None:
    app.before_request(_enforce)
    app.after_request(_filter_lists)


def _enforce() -> Response | None:
    settings = state().settings
    if not settings.acl_enabled:
        return None
    endpoint = request.endpoint or ""
    requirement = REQUIREMENTS.get(endpoint)
    try:
        if requirement is None:
            if request.url_rule is None:
                return None  # 404/405: Flask answers it
            raise Denied()  # fail closed; tests/unit/test_acl_routes.py catches the omission
        _check(requirement)
    except Denied as denied:
        log.warning(
            "permission denied",
            accessor=g.get("corral_accessor", "unknown"),
            method=request.method,
            path=request.path,
            endpoint=endpoint,
            reason=denied.message,
        )
        return Response(denied.message, status=403, content_type="text/plain; charset=utf-8")
    return None


def _check(requirement: Requirement) -> None:
    if isinstance(requirement, Public):
        return
    if isinstance(requirement, NodeSecret):
        g.corral_client_lane = True
        _check_node_secret()
        return
    if isinstance(requirement, NodeIntroduction):
        g.corral_client_lane = True
        if _known_node_reregisters():
            return
        requirement = Area("node", W)
    if isinstance(requirement, InNamespace) and requirement.node_may and _node_owns_allocation():
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
    elif isinstance(requirement, ListIn):
        wanted = request.args.get("namespace") or DEFAULT_NAMESPACE
        if wanted != "*" and not acl.allow_namespace_op(wanted, requirement.capability):
            raise Denied()
        g.corral_list_capability = requirement.capability
    elif isinstance(requirement, OwnFilter) and request.endpoint == "namespaces.list_namespaces":
        g.corral_list_namespaces = True


def _check_node_secret() -> None:
    """The node's own secret (or a management token) for the node in the path."""
    secret = presented_token()
    if not secret:
        raise Denied()
    raw = (request.view_args or {}).get("node_id", "")
    try:
        node_id = uuid.UUID(str(raw))
    except ValueError:
        return  # the route answers 400 for a malformed ID
    with state().reads() as session, session.begin():
        stored = session.scalar(select(Node.secret_hash).where(Node.id == node_id))
        if stored is not None and stored == secret_hash(secret):
            g.corral_accessor = f"node:{node_id}"
            return
        token = acl_store.resolve(session, secret)
    if token is not None and token.token.type == "management" and not _expired(token.token.expiration_time):
        g.corral_accessor = str(token.token.accessor_id)
        return
    if stored is None and token is None:
        return  # unknown node: the route answers 404/403 as it does without ACLs
    raise Denied()


def _known_node_reregisters() -> bool:
    try:
        body = json.loads(request.get_data(cache=True))
    except ValueError:
        return False
    node = body.get("Node") if isinstance(body, dict) else None
    if not isinstance(node, dict) or not isinstance(node.get("SecretID"), str) or not node["SecretID"]:
        return False
    try:
        node_id = uuid.UUID(str(node.get("ID")))
    except ValueError:
        return False
    with state().reads() as session, session.begin():
        stored = session.scalar(select(Node.secret_hash).where(Node.id == node_id))
    if stored is None or stored != secret_hash(node["SecretID"]):
        return False
    g.corral_accessor = f"node:{node_id}"
    return True


def _expired(moment: datetime | None) -> bool:
    return moment is not None and moment <= datetime.now(UTC)


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
        try:
            body = json.loads(request.get_data(cache=True))
        except ValueError:
            body = None  # the route refuses the body with a 400 naming the problem
        job = body.get("Job") if isinstance(body, dict) else None
        named = job.get("Namespace") if isinstance(job, dict) else None
        return named if isinstance(named, str) and named else request.args.get("namespace") or DEFAULT_NAMESPACE
    model, key = _OBJECTS[source]
    object_id = _path_uuid(key)
    if object_id is None:
        return None
    with state().reads() as session, session.begin():
        namespace = session.scalar(select(model.namespace).where(model.id == object_id))
    return str(namespace) if namespace is not None else None


def _path_uuid(key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str((request.view_args or {}).get(key, "")))
    except ValueError:
        return None


def _node_owns_allocation() -> bool:
    """A client reading an allocation placed on its own node, with the node's secret."""
    secret = presented_token()
    alloc_id = _path_uuid("alloc_id")
    if not secret or alloc_id is None:
        return False
    with state().reads() as session, session.begin():
        stored = session.scalar(
            select(Node.secret_hash).join(Allocation, Allocation.node_id == Node.id).where(Allocation.id == alloc_id)
        )
    if stored is None or stored != secret_hash(secret):
        return False
    g.corral_accessor = "node"
    return True


def _filter_lists(response: Response) -> Response:
    capability = g.get("corral_list_capability")
    namespaces = g.get("corral_list_namespaces", False)
    if not (capability or namespaces) or response.status_code != 200 or not response.is_json:
        return response
    acl = caller().acl
    if acl.management:
        return response
    items = response.get_json()
    if not isinstance(items, list):
        return response
    if namespaces:
        kept = [i for i in items if isinstance(i, dict) and acl.allow_namespace(str(i.get("Name")))]
    else:
        kept = [i for i in items if isinstance(i, dict) and acl.allow_namespace_op(str(i.get("Namespace")), capability)]
    response.set_data(json.dumps(kept))
    return response
