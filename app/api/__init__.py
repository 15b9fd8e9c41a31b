"""The REST API under /v1, following Nomad's routes and JSON shapes."""

from __future__ import annotations

from flask import Flask, Response, request
from sqlalchemy.exc import SQLAlchemyError

from app.api.access import authz
from app.api.http import crosssite, errors
from app.api.http.context import state
from app.api.http.params import path_value
from app.api.routes import (
    acl,
    acl_auth,
    acl_login,
    acl_oidc,
    acl_roles,
    allocs,
    deployments,
    eval_delete,
    evals,
    events,
    namespaces,
    replaced,
    scaling_policies,
    search,
    services,
    variables,
)
from app.api.routes.client import client, client_allocs, client_exec, client_fs, client_identities, client_meta
from app.api.routes.cluster import activity, agent, agent_debug, keyring, metrics, operator, schedulers, status, system
from app.api.routes.jobs import (
    evaluate,
    job_actions,
    job_plan,
    job_scale,
    job_statuses,
    job_submission,
    job_tags,
    job_validate,
    job_versions,
    jobs,
    periodic,
)
from app.api.routes.nodes import node_pools, node_purge, nodes
from app.api.routes.volumes import csi, host_volumes, volume_claims
from app.db.state_index import current_index
from app.ui import pages as ui_pages

# How each URL path variable is named in error messages, as in Nomad's bodies.
PATH_FIELDS = {
    "job_id": "JobID",
    "node_id": "NodeID",
    "eval_id": "EvalID",
    "alloc_id": "AllocID",
    "deployment_id": "DeploymentID",
    "var_path": "Path",
}


def register(app: Flask) -> None:
    for module in (
        agent,
        agent_debug,
        schedulers,
        acl,
        acl_auth,
        acl_login,
        acl_oidc,
        acl_roles,
        namespaces,
        job_plan,
        job_statuses,
        job_submission,
        job_tags,
        job_actions,
        periodic,
        scaling_policies,
        job_scale,
        job_validate,
        job_versions,
        deployments,
        services,
        jobs,
        evals,
        eval_delete,
        allocs,
        node_pools,
        node_purge,
        nodes,
        metrics,
        operator,
        activity,
        system,
        client,
        client_fs,
        client_allocs,
        client_exec,
        client_meta,
        status,
        replaced,
        search,
        evaluate,
        events,
        variables,
        keyring,
        client_identities,
        host_volumes,
        volume_claims,
        csi,
    ):
        app.register_blueprint(module.bp, url_prefix="/v1")
    app.register_blueprint(keyring.public)  # /.well-known/jwks.json and openid-configuration, where verifiers look
    app.register_blueprint(ui_pages.bp, url_prefix="/ui")  # page shells; their data comes from /v1
    app.url_value_preprocessor(_check_path_values)
    crosssite.install(app)  # first: a cross-site request is refused before anything reads it
    authz.install(app)
    errors.install(app)
    app.after_request(_index_header)


def _index_header(response: Response) -> Response:
    """Nomad clients read X-Nomad-Index from a route's answers; 4xx answers have not read any
    state, so they report the current index. A path or method no route serves gets none, as in
    Nomad (no handler sets it): that answer costs no database read. Best effort: never turn an
    answer into an error."""
    if "X-Nomad-Index" in response.headers or response.status_code >= 500 or request.url_rule is None:
        return response
    try:
        with state().reads() as session, session.begin():
            response.headers["X-Nomad-Index"] = str(current_index(session, ["_global"]))
    except SQLAlchemyError:
        pass
    return response


def _check_path_values(endpoint: str | None, values: dict[str, object] | None) -> None:
    """IDs in the URL path get the same checks as query parameters (no NUL characters)."""
    for name, value in (values or {}).items():
        if isinstance(value, str):
            path_value(value, PATH_FIELDS.get(name, name))
