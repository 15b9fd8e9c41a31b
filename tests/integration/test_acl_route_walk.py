"""Every route of the API, walked with six kinds of caller, ACLs on: none may get a 2xx where
Nomad answers 403. The routes come from Flask's url_map, so a route added later is walked too;
what each caller may do is written here from Nomad's ACL model (not read from app.api.access.authz),
so a wrong entry in the route table fails this test.

The objects acted on (a job, its evaluation, an allocation, a deployment, a node) all live in
the `default` namespace; the callers are: no token, an unknown token, a token that may do
everything in another namespace, a logs-only token, an introduction token (node:write) and a
read-only token for `default`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.rows import insert_allocation, insert_deployment

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]

# Routes any caller may use in Nomad (health, status, regions, the bootstrap, which guards itself),
# and the UI's page shells and static files, which carry no data.
PUBLIC = {
    "/v1/agent/health",
    "/v1/status/leader",
    "/v1/status/peers",
    "/v1/regions",
    "/v1/acl/bootstrap",
    "/v1/metrics",
    "/.well-known/jwks.json",
    "/v1/acl/auth-methods",  # Nomad's list is open: a sign-in page shows the methods
}
# Routes that answer every caller with only what its token may see (Nomad filters them).
SELF_FILTERED = {
    "/v1/acl/policies",
    "/v1/acl/roles",  # the roles the token links: none of these callers links one
    "/v1/namespaces",
    "/v1/acl/token/self",
    "/v1/acl/policy/<name>",
    "/v1/vars",  # each caller sees the paths it may list: none of these callers may list any
    "/v1/acl/policy/self",  # the caller's own policies
    "/v1/acl/token/onetime",  # a one-time secret for the caller's own token (anonymous: 403)
}
# Streams: walked by the event-stream tests, never answered here.
STREAMS = {
    "/v1/event/stream",
    "/v1/client/fs/stream/<alloc_id>",
    "/v1/client/allocation/<alloc_id>/exec",
    "/v1/agent/monitor",  # endless: its ACL is tested in tests/integration/test_agent_debug.py
}
# Nomad's node-area routes: node:read for GETs, node:write for the rest.
NODE_AREA = {
    "/v1/nodes",
    "/v1/node/<node_id>",
    "/v1/node/<node_id>/drain",
    "/v1/node/<node_id>/eligibility",
    "/v1/node/<node_id>/evaluate",
    "/v1/node/<node_id>/purge",
    "/v1/node/register",
    "/v1/agent/members",
    "/v1/client/stats",
    "/v1/client/gc",
    "/v1/client/metadata",
}
# Writes that change nothing: a read-only token may call them (parse-job, read-job).
READ_ONLY_POSTS = {"/v1/jobs/parse", "/v1/validate/job"}
LOGS = "/v1/client/fs/logs/<alloc_id>"


@dataclass(frozen=True)
class Objects:
    job: str
    eval_id: str
    alloc_id: str
    deployment_id: str
    node_id: str
    node_secret: str
    role_id: str  # a role named "default" that no walking caller links


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=1, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def _auth(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret}


def _token(api: FlaskClient, root: str, name: str, rules: str) -> str:
    policy = api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=_auth(root))
    assert policy.status_code == 200
    made = api.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=_auth(root))
    assert made.status_code == 200, made.get_data(as_text=True)
    secret: str = json_body(made)["SecretID"]
    return secret


def _objects(api: FlaskClient, root: str, pg: Conn) -> Objects:
    assert api.put("/v1/namespace/other", json={"Name": "other"}, headers=_auth(root)).status_code == 200
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=_auth(root)).status_code == 200
    node_id = str(uuid.uuid4())
    registered = api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=_auth(root))
    assert registered.status_code == 200, registered.get_data(as_text=True)
    row = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web' LIMIT 1").fetchone()
    assert row is not None
    eval_id = str(row[0])
    alloc_id = insert_allocation(pg, node_id, eval_id)
    deployment_id = insert_deployment(pg)
    pg.commit()
    assert (
        api.put("/v1/acl/policy/walk", json={"Rules": 'node { policy = "read" }'}, headers=_auth(root)).status_code
        == 200
    )
    role = api.put("/v1/acl/role", json={"Name": "default", "Policies": [{"Name": "walk"}]}, headers=_auth(root))
    assert role.status_code == 200, role.get_data(as_text=True)
    return Objects(
        "web",
        eval_id,
        alloc_id,
        deployment_id,
        node_id,
        json_body(registered)["SecretID"],
        json_body(role)["ID"],
    )


def _fill(rule: str, objects: Objects) -> str:
    values = {
        "<path:job_id>": objects.job,
        "<alloc_id>": objects.alloc_id,
        "<eval_id>": objects.eval_id,
        "<deployment_id>": objects.deployment_id,
        "<node_id>": objects.node_id,
        "<name>": "default",
        "<accessor>": str(uuid.uuid4()),
        "<role_id>": objects.role_id,
        "<path:profile>": "heap",
        "<path:var_path>": "nomad/jobs/web",
        "<policy>": str(uuid.uuid4()),
    }
    for placeholder, value in values.items():
        rule = rule.replace(placeholder, value)
    return rule


def _body(rule: str) -> dict[str, Any] | None:
    """A valid body where one matters, so a denial is the only reason for a refusal."""
    if rule in ("/v1/jobs", "/v1/validate/job", "/v1/job/<path:job_id>", "/v1/job/<path:job_id>/plan"):
        return {"Job": minimal_job("web")}
    if rule == "/v1/jobs/parse":
        return {"JobHCL": 'job "web" {\n  group "g" {\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'}
    if rule == "/v1/node/register":
        return {"Node": node_body(str(uuid.uuid4()))}
    if rule == "/v1/var/<path:var_path>":
        return {"Items": {"k": "v"}}
    return {}


def _may_succeed(caller: str, rule: str, method: str) -> bool:
    """Whether Nomad could answer `caller` with a 2xx on this route, objects all in `default`."""
    if rule in PUBLIC or rule in SELF_FILTERED or rule.startswith(("/ui/", "/static/")):
        return True
    if rule == "/v1/node/pools" and method == "GET":
        return True  # filtered to the pools the token has node_pool rules for: [] here
    if caller == "introduction":
        return rule in NODE_AREA
    if rule == "/v1/namespace/<name>" and method == "GET":
        return caller in ("logs-only", "reader")  # any capability in a namespace lets a token read it
    if caller == "logs-only":
        return rule == LOGS
    if caller == "reader":
        if rule in READ_ONLY_POSTS:
            return True
        namespaced = rule.startswith(
            (
                "/v1/job",
                "/v1/allocation",
                "/v1/evaluation",
                "/v1/deployment",
                "/v1/client/",
                "/v1/service",
                "/v1/scaling",
                "/v1/volume",  # Nomad's read policy includes host-volume-read and csi-list/read-volume
            )
        )
        return namespaced and method == "GET" and rule != "/v1/client/stats"
    return False  # no token, an unknown token, or rights only in another namespace


def _routes(app: Flask) -> list[tuple[str, str]]:
    walked: list[tuple[str, str]] = []
    for rule in app.url_map.iter_rules():
        if rule.rule in STREAMS:
            continue
        walked.extend((rule.rule, method) for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}))
    return sorted(set(walked))


def test_no_caller_gets_a_2xx_where_nomad_answers_403(app: Flask, pg: Conn) -> None:
    api = app.test_client()
    root: str = json_body(api.post("/v1/acl/bootstrap"))["SecretID"]
    objects = _objects(api, root, pg)
    callers: dict[str, dict[str, str]] = {
        "anonymous": {},
        "unknown": _auth(str(uuid.uuid4())),
        "other-namespace": _auth(_token(api, root, "other", 'namespace "other" { policy = "write" }')),
        "logs-only": _auth(_token(api, root, "logs", 'namespace "default" { capabilities = ["read-logs"] }')),
        "introduction": _auth(_token(api, root, "intro", 'node { policy = "write" }')),
        "reader": _auth(_token(api, root, "reader", 'namespace "default" { policy = "read" }')),
    }
    routes = _routes(app)
    assert len(routes) > 80, "the walk must cover the whole API"
    wrong = []
    for rule, method in routes:
        for caller, headers in callers.items():
            answer = api.open(_fill(rule, objects), method=method, json=_body(rule), headers=headers)
            if 200 <= answer.status_code < 300 and not _may_succeed(caller, rule, method):
                wrong.append(f"{caller}: {method} {rule} -> {answer.status_code}")
    assert wrong == [], "\n".join(wrong)


def test_self_filtered_lists_show_a_caller_nothing_of_what_it_may_not_read(app: Flask, pg: Conn) -> None:
    api = app.test_client()
    root: str = json_body(api.post("/v1/acl/bootstrap"))["SecretID"]
    _objects(api, root, pg)
    other = _auth(_token(api, root, "other", 'namespace "other" { policy = "write" }'))
    assert [n["Name"] for n in json_body(api.get("/v1/namespaces", headers=other))] == ["other"]
    assert [p["Name"] for p in json_body(api.get("/v1/acl/policies", headers=other))] == ["other"]
    assert api.get("/v1/acl/policies").json == []
    assert api.get("/v1/namespace/default", headers=other).status_code == 403
    for path in ("/v1/jobs", "/v1/allocations", "/v1/evaluations", "/v1/deployments", "/v1/services"):
        listed = api.get(f"{path}?namespace=*", headers=other)
        assert listed.status_code == 200 and listed.json == [], path
        assert "X-Nomad-NextToken" not in listed.headers, path


def test_variable_lists_show_a_caller_only_the_paths_it_may_list(app: Flask, pg: Conn) -> None:
    api = app.test_client()
    root: str = json_body(api.post("/v1/acl/bootstrap"))["SecretID"]
    for path in ("nomad/jobs/web", "team/a", "team/b"):
        assert api.put(f"/v1/var/{path}", json={"Items": {"k": "v"}}, headers=_auth(root)).status_code == 200
    rules = 'namespace "default" { variables { path "team/*" { capabilities = ["list"] } } }'
    lister = _auth(_token(api, root, "team", rules))
    listed = api.get("/v1/vars?namespace=*&per_page=1", headers=lister)
    assert [v["Path"] for v in json_body(listed)] == ["team/a"]
    assert listed.headers["X-Nomad-NextToken"] == "default.team/b"
    assert api.get("/v1/var/team/a", headers=lister).status_code == 403  # list is not read
    other = _auth(_token(api, root, "other", 'namespace "other" { policy = "write" }'))
    assert api.get("/v1/vars", headers=other).json == []
