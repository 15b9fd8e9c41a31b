"""Workload identities through the API: a node gets its own allocations' identities signed
(never another node's), and with ACLs on an identity reads its own job's variables, is refused
another job's, and stops working once its allocation has finished."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from flask import Flask

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=1, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def test_identities_are_signed_for_the_nodes_own_allocations_and_grant_nomads_implicit_access(
    app: Flask, pg: Conn
) -> None:
    api = app.test_client()
    root = {"X-Nomad-Token": json_body(api.post("/v1/acl/bootstrap"))["SecretID"]}
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=root).status_code == 200
    node_id = "00000000-0000-4000-8000-0000000000a1"
    registered = api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=root)
    secret = json_body(registered)["SecretID"]
    other_node = "00000000-0000-4000-8000-0000000000a2"
    other_registered = api.put("/v1/node/register", json={"Node": node_body(other_node)}, headers=root)
    other_secret = json_body(other_registered)["SecretID"]
    row = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web' LIMIT 1").fetchone()
    assert row is not None
    alloc_id = insert_allocation(pg, node_id, str(row[0]))
    for path in ("nomad/jobs/web", "nomad/jobs/db"):
        assert api.put(f"/v1/var/{path}", json={"Items": {"k": path}}, headers=root).status_code == 200

    wanted = {"Identities": [{"AllocID": alloc_id, "TaskName": "t"}, {"AllocID": alloc_id, "TaskName": "nope"}]}
    signed = api.put(f"/v1/node/{node_id}/identities", json=wanted, headers={"X-Nomad-Token": secret})
    assert signed.status_code == 200, signed.get_data(as_text=True)
    assert [r["Reason"] for r in json_body(signed)["Rejections"]] == ["task not found"]
    token = {"X-Nomad-Token": json_body(signed)["SignedIdentities"][0]["JWT"]}
    stolen = api.put(f"/v1/node/{other_node}/identities", json=wanted, headers={"X-Nomad-Token": other_secret})
    assert [r["Reason"] for r in json_body(stolen)["Rejections"]] == ["allocation not found"] * 2
    assert (
        api.put(f"/v1/node/{node_id}/identities", json=wanted, headers={"X-Nomad-Token": other_secret}).status_code
        == 403
    )

    own = api.get("/v1/var/nomad/jobs/web", headers=token)
    assert own.status_code == 200 and json_body(own)["Items"] == {"k": "nomad/jobs/web"}
    assert api.get("/v1/var/nomad/jobs/db", headers=token).status_code == 403
    assert api.put("/v1/var/nomad/jobs/web", json={"Items": {"k": "x"}}, headers=token).status_code == 403
    assert [v["Path"] for v in json_body(api.get("/v1/vars", headers=token))] == ["nomad/jobs/web"]
    assert api.get("/v1/jobs", headers=token).status_code == 403
    bearer = {"Authorization": "Bearer " + token["X-Nomad-Token"]}
    assert api.get("/v1/var/nomad/jobs/web", headers=bearer).status_code == 200
    # Service discovery (a template's nomadService): its own namespace's services, no other's.
    assert api.put("/v1/namespace/prod", json={"Name": "prod"}, headers=root).status_code == 200
    assert api.get("/v1/service/web", headers=token).status_code == 200
    assert api.get("/v1/service/web?namespace=prod", headers=token).status_code == 403
    listed = api.get("/v1/services", headers=token)
    assert listed.status_code == 200 and listed.json == []
    assert api.get("/v1/services?namespace=prod", headers=token).status_code == 403

    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (alloc_id,))
    assert api.get("/v1/var/nomad/jobs/web", headers=token).status_code == 403
    forged = token["X-Nomad-Token"][:-4] + "AAAA"
    assert api.get("/v1/var/nomad/jobs/web", headers={"X-Nomad-Token": forged}).status_code == 403
