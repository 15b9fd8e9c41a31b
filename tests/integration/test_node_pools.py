"""Node pools as Nomad's objects: /v1/node/pools and /v1/node/pool/:name[/nodes|/jobs], the
built-in 'default' and 'all', the checks on writes and deletes, and the node_pool ACL rules."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import minimal_job, node_body, register
from tests.support.nomad_json import problems

pytestmark = pytest.mark.integration
POOL_KEYS = {"Name", "Description", "Meta", "SchedulerConfiguration", "NodeIdentityTTL", "CreateIndex", "ModifyIndex"}


def get(client: FlaskClient, path: str, headers: dict[str, str] | None = None) -> Any:
    resp = client.get(path, headers=headers or {})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.json


def put_pool(client: FlaskClient, body: dict[str, Any], path: str = "/v1/node/pools", **headers: str) -> Any:
    return client.put(path, json=body, headers=headers)


def field(resp: Any) -> str:
    return str(resp.json["errors"][0]["field"])


def add_node(client: FlaskClient, pool: str, headers: dict[str, str] | None = None) -> str:
    node_id = str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, NodePool=pool)}, headers=headers or {})
    assert reply.status_code == 200, reply.json
    return node_id


def test_built_in_pools_are_listed_and_decode(client: FlaskClient) -> None:
    pools = get(client, "/v1/node/pools")
    assert [p["Name"] for p in pools] == ["all", "default"]
    for pool in pools:
        assert set(pool) == POOL_KEYS
        assert problems(pool, "NodePool", pool["Name"]) == []
    assert get(client, "/v1/node/pool/default")["Name"] == "default"
    assert client.get("/v1/node/pool/nope").status_code == 404


def test_create_read_update_delete(client: FlaskClient) -> None:
    # What Nomad's `node pool apply` sends (api.NodePool's JSON: NodeIdentityTTL "" when unset).
    body = {"Name": "gpu", "Description": "GPU nodes", "Meta": {"team": "ml"}, "NodeIdentityTTL": ""}
    created = put_pool(client, body)
    assert created.status_code == 200, created.json
    pool = get(client, "/v1/node/pool/gpu")
    assert (pool["Description"], pool["Meta"], pool["SchedulerConfiguration"]) == ("GPU nodes", {"team": "ml"}, None)
    assert pool["CreateIndex"] == pool["ModifyIndex"] == int(created.headers["X-Nomad-Index"])
    updated = put_pool(client, {**pool, "Description": "now bigger"}, "/v1/node/pool/gpu")  # read back, sent again
    assert updated.status_code == 200, updated.json
    again = get(client, "/v1/node/pool/gpu")
    assert again["Description"] == "now bigger" and again["CreateIndex"] == pool["CreateIndex"] < again["ModifyIndex"]
    assert [p["Name"] for p in get(client, "/v1/node/pools?prefix=g")] == ["gpu"]
    assert client.delete("/v1/node/pool/gpu").status_code == 200
    assert client.get("/v1/node/pool/gpu").status_code == 404
    assert client.delete("/v1/node/pool/gpu").status_code == 404


@pytest.mark.parametrize(
    ("body", "path", "wanted"),
    [
        ({"Name": "default", "Description": "x"}, "/v1/node/pools", "Name"),
        ({"Name": "all"}, "/v1/node/pools", "Name"),
        ({"Name": "bad name"}, "/v1/node/pools", "Name"),
        ({"Name": "gpu"}, "/v1/node/pool/other", "Name"),
        ({"Name": "gpu", "Description": "x" * 257}, "/v1/node/pools", "Description"),
        ({"Name": "gpu", "Meta": {"a": 1}}, "/v1/node/pools", "Meta.a"),
        ({"Name": "gpu", "SchedulerConfiguration": {"SchedulerAlgorithm": "spread"}}, "/v1/node/pools", ""),
        ({"Name": "gpu", "NodeIdentityTTL": "1h"}, "/v1/node/pools", "NodeIdentityTTL"),
        ({"Description": "no name"}, "/v1/node/pools", "Name"),
    ],
)
def test_bad_writes_are_refused_naming_the_field(
    client: FlaskClient, body: dict[str, Any], path: str, wanted: str
) -> None:
    resp = put_pool(client, body, path)
    assert resp.status_code == 400, resp.json
    assert field(resp) == (wanted or "SchedulerConfiguration"), resp.json
    assert client.get("/v1/node/pool/gpu").status_code == 404


def test_built_in_pools_cannot_be_deleted(client: FlaskClient) -> None:
    for name in ("default", "all"):
        resp = client.delete(f"/v1/node/pool/{name}")
        assert resp.status_code == 400 and "built-in" in resp.get_data(as_text=True)


def test_pool_nodes_and_jobs_and_deletes_of_pools_in_use(client: FlaskClient) -> None:
    gpu_node = add_node(client, "gpu")  # a node's pool is created when it registers, as Nomad's
    default_node = add_node(client, "default")
    assert get(client, "/v1/node/pool/gpu")["Name"] == "gpu"
    assert [n["ID"] for n in get(client, "/v1/node/pool/gpu/nodes")] == [gpu_node]
    assert {n["ID"] for n in get(client, "/v1/node/pool/all/nodes")} == {gpu_node, default_node}
    assert problems(get(client, "/v1/node/pool/all/nodes"), "[]*NodeListStub", "nodes") == []
    register(client, minimal_job("trainer", NodePool="gpu"))
    register(client, minimal_job("web"))
    jobs = get(client, "/v1/node/pool/gpu/jobs")
    assert [j["ID"] for j in jobs] == ["trainer"] and jobs[0]["NodePool"] == "gpu"
    assert problems(jobs, "[]*JobListStub", "jobs") == []
    assert [j["ID"] for j in get(client, "/v1/node/pool/default/jobs")] == ["web"]
    assert get(client, "/v1/node/pool/gpu/jobs?namespace=other") == []
    assert client.get("/v1/node/pool/nope/nodes").status_code == 404
    assert client.get("/v1/node/pool/nope/jobs").status_code == 404
    busy = client.delete("/v1/node/pool/gpu")
    assert busy.status_code == 400 and "non-terminal jobs" in busy.get_data(as_text=True)
    assert client.delete("/v1/job/trainer?purge=true").status_code == 200
    busy = client.delete("/v1/node/pool/gpu")
    assert busy.status_code == 400 and "has nodes" in busy.get_data(as_text=True)


def test_a_job_in_a_pool_that_does_not_exist_is_refused(client: FlaskClient) -> None:
    resp = client.put("/v1/jobs", json={"Job": minimal_job("web", NodePool="nope")})
    assert resp.status_code == 400 and field(resp) == "Job.NodePool"


@pytest.fixture
def acl_api(database_url: str) -> Iterator[FlaskClient]:
    app: Flask = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def token(api: FlaskClient, root: dict[str, str], name: str, rules: str) -> dict[str, str]:
    assert api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root).status_code == 200
    reply = api.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=root)
    assert reply.status_code == 200 and reply.json is not None
    return {"X-Nomad-Token": reply.json["SecretID"]}


def test_node_pool_acl_rules(acl_api: FlaskClient) -> None:
    bootstrap: Any = acl_api.post("/v1/acl/bootstrap").json
    root = {"X-Nomad-Token": bootstrap["SecretID"]}
    assert put_pool(acl_api, {"Name": "gpu"}, **root).status_code == 200
    add_node(acl_api, "gpu", root)
    reader = token(acl_api, root, "reader", 'node_pool "gpu" { policy = "read" }')
    writer = token(acl_api, root, "writer", 'node_pool "team-*" { policy = "write" }\nnode { policy = "read" }')
    assert [p["Name"] for p in get(acl_api, "/v1/node/pools", reader)] == ["gpu"]
    assert get(acl_api, "/v1/node/pool/gpu", reader)["Name"] == "gpu"
    assert acl_api.get("/v1/node/pool/default", headers=reader).status_code == 403
    assert put_pool(acl_api, {"Name": "gpu", "Description": "x"}, **reader).status_code == 403
    assert acl_api.delete("/v1/node/pool/gpu", headers=reader).status_code == 403
    assert acl_api.get("/v1/node/pool/gpu/nodes", headers=reader).status_code == 403  # needs node:read too
    assert get(acl_api, "/v1/node/pool/gpu/jobs", reader) == []
    assert acl_api.get("/v1/node/pools").status_code == 200 and get(acl_api, "/v1/node/pools") == []  # anonymous
    assert put_pool(acl_api, {"Name": "team-a"}, **writer).status_code == 200
    assert put_pool(acl_api, {"Name": "team-a"}, "/v1/node/pool/team-a", **writer).status_code == 200
    assert put_pool(acl_api, {"Name": "other"}, **writer).status_code == 403
    assert get(acl_api, "/v1/node/pool/team-a/nodes", writer) == []
    assert acl_api.delete("/v1/node/pool/team-a", headers=writer).status_code == 200
