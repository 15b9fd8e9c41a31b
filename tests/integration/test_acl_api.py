"""ACLs over the HTTP API with ACLs on: bootstrap (once, reset index), policies, tokens, and one
test per capability class (anonymous denied, right token allowed, wrong namespace denied,
expired token denied), lists filtered, node routes by node secret, denials logged by accessor."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
import structlog
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]

READER = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


@pytest.fixture
def api(app: Flask) -> FlaskClient:
    return app.test_client()


def auth(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret}


def body(resp: Any) -> Any:
    return resp.json


@pytest.fixture
def root(api: FlaskClient) -> str:
    resp = api.post("/v1/acl/bootstrap")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    secret: str = json_body(resp)["SecretID"]
    return secret


def make_token(api: FlaskClient, root: str, rules: str, name: str = "reader", **fields: Any) -> dict[str, Any]:
    assert api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=auth(root)).status_code == 200
    resp = api.put(
        "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name], **fields}, headers=auth(root)
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)
    token: dict[str, Any] = json_body(resp)
    return token


def test_bootstrap_once_then_only_with_the_reset_index(api: FlaskClient, app: Flask, pg: Conn) -> None:
    first = api.post("/v1/acl/bootstrap")
    assert first.status_code == 200
    token = body(first)
    assert token["Type"] == "management" and token["Name"] == "Bootstrap Token" and token["Global"] is True
    assert set(token) >= {
        "AccessorID",
        "SecretID",
        "Policies",
        "CreateTime",
        "ExpirationTime",
        "CreateIndex",
        "ModifyIndex",
    }
    again = api.post("/v1/acl/bootstrap")
    assert again.status_code == 400
    assert f"ACL bootstrap already done (reset index: {token['CreateIndex']})" in json_body(again)["detail"]
    stored = pg.execute("SELECT secret_hash FROM acl_tokens").fetchall()
    assert stored and all(row[0] != token["SecretID"] for row in stored)  # only the hash is kept
    state = app.extensions["corral"]
    state.settings = state.settings.model_copy(update={"acl_bootstrap_reset_index": token["CreateIndex"]})
    reset = api.post("/v1/acl/bootstrap", json={"BootstrapSecret": str(uuid.uuid4())})
    assert reset.status_code == 200 and json_body(reset)["AccessorID"] != token["AccessorID"]


def test_anonymous_is_denied_with_nomads_body(api: FlaskClient, root: str) -> None:
    for method, path in [("PUT", "/v1/jobs"), ("GET", "/v1/jobs"), ("PUT", "/v1/node/register"), ("GET", "/v1/nodes")]:
        resp = api.open(path, method=method, json={"Job": minimal_job()} if method == "PUT" else None)
        assert resp.status_code == 403, path
        assert resp.get_data(as_text=True) == "Permission denied"
    for path in ["/v1/operator/scheduler/configuration", "/v1/agent/self", "/v1/acl/tokens"]:
        assert api.get(path).status_code == 403
    assert api.put("/v1/system/gc").status_code == 403
    assert api.get("/v1/agent/health").status_code == 200
    unknown = api.get("/v1/jobs", headers=auth(str(uuid.uuid4())))
    assert unknown.status_code == 403 and unknown.get_data(as_text=True) == "ACL token not found"


def test_anonymous_policy_applies_without_a_token(api: FlaskClient, root: str) -> None:
    assert api.get("/v1/jobs").status_code == 403
    rules = 'namespace "default" { policy = "read" }'
    assert api.put("/v1/acl/policy/anonymous", json={"Rules": rules}, headers=auth(root)).status_code == 200
    assert api.get("/v1/jobs").status_code == 200
    assert api.put("/v1/jobs", json={"Job": minimal_job()}).status_code == 403


def test_right_token_allowed_wrong_capability_denied(api: FlaskClient, root: str) -> None:
    reader = make_token(api, root, READER)["SecretID"]
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=auth(root)).status_code == 200
    assert api.get("/v1/jobs", headers=auth(reader)).status_code == 200
    assert api.get("/v1/job/web", headers=auth(reader)).status_code == 200
    assert api.get("/v1/nodes", headers=auth(reader)).status_code == 200
    bearer = api.get("/v1/job/web", headers={"Authorization": f"Bearer {reader}"})
    assert bearer.status_code == 200
    assert api.put("/v1/jobs", json={"Job": minimal_job("x")}, headers=auth(reader)).status_code == 403
    assert api.delete("/v1/job/web", headers=auth(reader)).status_code == 403
    assert (
        api.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()))}, headers=auth(reader)).status_code
        == 403
    )
    assert api.get("/v1/operator/scheduler/configuration", headers=auth(reader)).status_code == 403


def test_wrong_namespace_denied_and_lists_filtered(api: FlaskClient, root: str) -> None:
    assert api.put("/v1/namespace/prod", json={"Name": "prod"}, headers=auth(root)).status_code == 200
    for ns in ("default", "prod"):
        job = minimal_job(f"web-{ns}", Namespace=ns)
        assert api.put("/v1/jobs", json={"Job": job}, headers=auth(root)).status_code == 200
    writer = make_token(api, root, 'namespace "default" { policy = "write" }', "dev")["SecretID"]
    assert api.get("/v1/job/web-prod?namespace=prod", headers=auth(writer)).status_code == 403
    assert api.get("/v1/jobs?namespace=prod", headers=auth(writer)).status_code == 403
    # The namespace inside the body is the one checked, not the query's.
    sneaky = api.put(
        "/v1/jobs?namespace=default", json={"Job": minimal_job("x", Namespace="prod")}, headers=auth(writer)
    )
    assert sneaky.status_code == 403
    everything = api.get("/v1/jobs?namespace=*", headers=auth(writer))
    assert everything.status_code == 200 and [j["ID"] for j in json_body(everything)] == ["web-default"]
    assert {j["ID"] for j in json_body(api.get("/v1/jobs?namespace=*", headers=auth(root)))} == {
        "web-default",
        "web-prod",
    }
    allocs = json_body(api.get("/v1/evaluations?namespace=*", headers=auth(writer)))
    assert allocs and {e["Namespace"] for e in allocs} == {"default"}
    prod_eval = next(
        e for e in json_body(api.get("/v1/evaluations?namespace=*", headers=auth(root))) if e["Namespace"] == "prod"
    )
    assert api.get(f"/v1/evaluation/{prod_eval['ID']}", headers=auth(writer)).status_code == 403
    assert [n["Name"] for n in json_body(api.get("/v1/namespaces", headers=auth(writer)))] == ["default"]
    assert api.get("/v1/namespace/prod", headers=auth(writer)).status_code == 403


def test_expired_token_denied(api: FlaskClient, root: str, pg: Conn) -> None:
    token = make_token(api, root, READER, ExpirationTTL="1h")
    assert token["ExpirationTime"] and token["ExpirationTTL"] == 3600 * 10**9
    assert api.get("/v1/jobs", headers=auth(token["SecretID"])).status_code == 200
    pg.execute(
        "UPDATE acl_tokens SET expiration_time = now() - interval '1 second' WHERE accessor_id = %s",
        [token["AccessorID"]],
    )
    pg.commit()
    resp = api.get("/v1/jobs", headers=auth(token["SecretID"]))
    assert resp.status_code == 403 and resp.get_data(as_text=True) == "ACL token expired"


def test_token_crud_and_self(api: FlaskClient, root: str) -> None:
    token = make_token(api, root, READER)
    accessor, secret = token["AccessorID"], token["SecretID"]
    me = api.get("/v1/acl/token/self", headers=auth(secret))
    assert me.status_code == 200 and json_body(me)["AccessorID"] == accessor and json_body(me)["SecretID"] == secret
    listed = json_body(api.get("/v1/acl/tokens", headers=auth(root)))
    assert {t["AccessorID"] for t in listed} >= {accessor} and all("SecretID" not in t for t in listed)
    info = json_body(api.get(f"/v1/acl/token/{accessor}", headers=auth(root)))
    assert info["SecretID"] == "" and info["Policies"] == ["reader"]
    assert api.get(f"/v1/acl/token/{accessor}", headers=auth(secret)).status_code == 403
    updated = api.post(
        f"/v1/acl/token/{accessor}",
        json={"Name": "renamed", "Type": "client", "Policies": ["reader"]},
        headers=auth(root),
    )
    assert updated.status_code == 200 and json_body(updated)["Name"] == "renamed"
    assert [p["Name"] for p in json_body(api.get("/v1/acl/policies", headers=auth(secret)))] == ["reader"]
    assert json_body(api.get("/v1/acl/policy/reader", headers=auth(secret)))["Rules"] == READER
    assert api.delete(f"/v1/acl/token/{accessor}", headers=auth(root)).status_code == 200
    assert api.get("/v1/jobs", headers=auth(secret)).status_code == 403


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"Type": "root", "Policies": ["p"]}, "Type"),
        ({"Type": "client"}, "Policies"),
        ({"Type": "management", "Policies": ["p"]}, "Policies"),
        ({"Policies": ["p"], "ExpirationTTL": "1s"}, "ExpirationTTL"),
        ({"Policies": ["p"], "ExpirationTime": "2000-01-01T00:00:00Z"}, "ExpirationTime"),
        ({"Policies": ["p"], "ExpirationTTL": "1h", "ExpirationTime": "2999-01-01T00:00:00Z"}, "ExpirationTTL"),
    ],
)
def test_bad_token_requests_name_the_field(api: FlaskClient, root: str, fields: dict[str, Any], field: str) -> None:
    resp = api.put("/v1/acl/token", json=fields, headers=auth(root))
    assert resp.status_code == 400 and json_body(resp)["errors"][0]["field"] == field


def test_bad_policy_is_refused_and_nothing_written(api: FlaskClient, root: str, pg: Conn) -> None:
    resp = api.put("/v1/acl/policy/bad", json={"Rules": 'namespace "x" { policy = "root" }'}, headers=auth(root))
    assert resp.status_code == 400 and json_body(resp)["errors"][0]["field"] == "Rules"
    assert pg.execute("SELECT count(*) FROM acl_policies").fetchone() == (0,)


def test_acl_routes_say_disabled_when_acls_are_off(client: FlaskClient) -> None:
    resp = client.post("/v1/acl/bootstrap")
    assert resp.status_code == 400 and "ACL support disabled" in json_body(resp)["detail"]
    assert client.put("/v1/jobs", json={"Job": minimal_job()}).status_code == 200


def test_node_routes_take_only_the_nodes_secret(api: FlaskClient, root: str) -> None:
    introducer = make_token(api, root, 'node { policy = "write" }', "intro")["SecretID"]
    node_id = str(uuid.uuid4())
    assert api.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 403
    registered = api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=auth(introducer))
    assert registered.status_code == 200, registered.get_data(as_text=True)
    secret = json_body(registered)["SecretID"]
    assert api.get(f"/v1/node/{node_id}/allocations").status_code == 403
    assert api.get(f"/v1/node/{node_id}/allocations", headers=auth(introducer)).status_code == 403
    other = json_body(
        api.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()))}, headers=auth(introducer))
    )
    assert api.get(f"/v1/node/{node_id}/allocations", headers=auth(other["SecretID"])).status_code == 403
    assert api.get(f"/v1/node/{node_id}/allocations", headers=auth(secret)).status_code == 200
    assert api.put(f"/v1/node/{node_id}/heartbeat", json={}, headers=auth(secret)).status_code == 200
    assert api.get(f"/v1/node/{node_id}/allocations", headers=auth(root)).status_code == 200


def test_denials_are_logged_with_the_accessor_never_the_secret(api: FlaskClient, root: str) -> None:
    token = make_token(api, root, READER)
    with structlog.testing.capture_logs() as logs:
        assert api.put("/v1/jobs", json={"Job": minimal_job()}, headers=auth(token["SecretID"])).status_code == 403
    denied = [e for e in logs if e["event"] == "permission denied"]
    assert denied and denied[0]["accessor"] == token["AccessorID"]
    assert token["SecretID"] not in repr(logs)


def test_namespace_crud(api: FlaskClient, root: str) -> None:
    assert (
        api.put(
            "/v1/namespace", json={"Name": "team-a", "Description": "A", "Meta": {"k": "v"}}, headers=auth(root)
        ).status_code
        == 200
    )
    got = json_body(api.get("/v1/namespace/team-a", headers=auth(root)))
    assert got["Description"] == "A" and got["Meta"] == {"k": "v"}
    assert api.put("/v1/namespace/team-a", json={"Name": "team-a"}).status_code == 403
    assert api.put("/v1/namespace/bad name", json={}, headers=auth(root)).status_code == 400
    job = minimal_job("j", Namespace="team-a")
    assert api.put("/v1/jobs", json={"Job": job}, headers=auth(root)).status_code == 200
    assert api.delete("/v1/namespace/team-a", headers=auth(root)).status_code == 400
    assert api.delete("/v1/namespace/default", headers=auth(root)).status_code == 400
    missing = api.put("/v1/jobs", json={"Job": minimal_job("k", Namespace="nope")}, headers=auth(root))
    assert missing.status_code == 400 and "does not exist" in json_body(missing)["detail"]


def test_a_registered_node_reregisters_with_its_own_secret(api: FlaskClient, root: str) -> None:
    introducer = make_token(api, root, 'node { policy = "write" }', "intro")["SecretID"]
    node_id = str(uuid.uuid4())
    first = json_body(api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=auth(introducer)))
    again = api.put("/v1/node/register", json={"Node": node_body(node_id, SecretID=first["SecretID"])})
    assert again.status_code == 200, again.get_data(as_text=True)
    forged = api.put("/v1/node/register", json={"Node": node_body(node_id, SecretID=str(uuid.uuid4()))})
    assert forged.status_code == 403
    fresh = api.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()), SecretID=str(uuid.uuid4()))})
    assert fresh.status_code == 403  # an unknown node needs the introduction token


def test_a_node_reads_allocations_placed_on_it_with_its_secret(api: FlaskClient, root: str, pg: Conn) -> None:
    introducer = make_token(api, root, 'node { policy = "write" }', "intro")["SecretID"]
    nodes = []
    for _ in range(2):
        node_id = str(uuid.uuid4())
        reply = json_body(api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=auth(introducer)))
        nodes.append((node_id, reply["SecretID"]))
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=auth(root)).status_code == 200
    eval_id = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web' LIMIT 1").fetchone()
    assert eval_id is not None
    insert_allocation(pg, nodes[0][0], str(eval_id[0]))
    pg.commit()
    alloc_id = json_body(api.get("/v1/allocations", headers=auth(root)))[0]["ID"]
    assert api.get(f"/v1/allocation/{alloc_id}", headers=auth(nodes[0][1])).status_code == 200
    assert api.get(f"/v1/allocation/{alloc_id}", headers=auth(nodes[1][1])).status_code == 403
    assert api.get(f"/v1/allocation/{alloc_id}").status_code == 403


def test_concurrent_bootstraps_make_one_token(api: FlaskClient, pg: Conn) -> None:
    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(lambda _: api.post("/v1/acl/bootstrap").status_code, range(4)))
    assert statuses == [200, 400, 400, 400]
    assert pg.execute("SELECT count(*) FROM acl_tokens WHERE type = 'management'").fetchone() == (1,)
