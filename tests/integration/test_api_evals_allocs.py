"""Evaluations and allocations over HTTP: filters, pagination, related evals, bad parameters."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def register(client: FlaskClient, job_id: str) -> str:
    body = client.put("/v1/jobs", json={"Job": minimal_job(job_id)}).json
    assert body is not None
    return str(body["EvalID"])


def test_list_filters_by_job_and_status(client: FlaskClient, pg: Conn) -> None:
    a, b = register(client, "a"), register(client, "b")
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (a,))
    assert [e["ID"] for e in json_body(client.get("/v1/evaluations?job=b"))] == [b]
    assert [e["ID"] for e in json_body(client.get("/v1/evaluations?status=complete"))] == [a]
    assert [e["ID"] for e in json_body(client.get(f"/v1/evaluations?prefix={b[:24]}"))] == [b]


def test_pagination_walks_every_eval_once(client: FlaskClient) -> None:
    ids = [register(client, f"job-{i}") for i in range(7)]
    seen: list[str] = []
    token = ""
    for _ in range(10):
        resp = client.get(f"/v1/evaluations?per_page=3&next_token={token}")
        seen += [e["ID"] for e in json_body(resp)]
        token = resp.headers.get("X-Nomad-NextToken", "")
        if not token:
            break
    assert seen == ids
    backwards = [e["ID"] for e in json_body(client.get("/v1/evaluations?reverse=true"))]
    assert backwards == ids[::-1]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=running", "status"),
        ("per_page=-1", "per_page"),
        ("per_page=ten", "per_page"),
        ("next_token=garbage", "next_token"),
        ("prefix=%25", "prefix"),
        ("filter=Status%20%3D%20%22pending%22", "filter"),
        ("filter=Status%20%3D%3D%20pending&status=pending", "filter"),
        ("index=-3", "index"),
        ("wait=forever", "wait"),
        ("reverse=maybe", "reverse"),
    ],
)
def test_bad_list_parameters_are_400(client: FlaskClient, query: str, field: str) -> None:
    resp = client.get(f"/v1/evaluations?{query}")
    assert resp.status_code == 400
    assert json_body(resp)["errors"][0]["field"] == field


def test_a_leased_evaluation_says_until_when_it_is_in_flight(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, "web")
    assert json_body(client.get(f"/v1/evaluation/{eval_id}"))["LeaseExpiresAt"] == 0
    pg.execute(
        "UPDATE evaluations SET lease_token = gen_random_uuid(), lease_owner = 'w:1', "
        "lease_expires_at = '2030-01-01T00:00:00Z' WHERE id = %s",
        (eval_id,),
    )
    leased = client.get(f"/v1/evaluation/{eval_id}").json
    assert leased is not None and leased["Status"] == "pending"
    assert leased["LeaseExpiresAt"] == 1_893_456_000 * 1_000_000_000
    listed = client.get("/v1/evaluations").json
    assert listed is not None and listed[0]["LeaseExpiresAt"] == leased["LeaseExpiresAt"]


def test_get_eval_errors(client: FlaskClient) -> None:
    assert client.get("/v1/evaluation/not-a-uuid").status_code == 400
    assert client.get(f"/v1/evaluation/{uuid.uuid4()}").status_code == 404


def test_related_evals_follow_links(client: FlaskClient, pg: Conn) -> None:
    first = register(client, "web")
    second = register(client, "web")
    pg.execute("UPDATE evaluations SET next_eval = %s, status = 'failed' WHERE id = %s", (second, first))
    pg.execute("UPDATE evaluations SET previous_eval = %s WHERE id = %s", (first, second))
    body = client.get(f"/v1/evaluation/{second}?related=true").json
    assert body is not None
    assert [e["ID"] for e in body["RelatedEvals"]] == [first]


def test_allocations_by_eval_node_and_id(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, "web")
    node_id = insert_node(pg)
    alloc_id = insert_allocation(pg, node_id, eval_id)
    assert [a["ID"] for a in json_body(client.get(f"/v1/evaluation/{eval_id}/allocations"))] == [alloc_id]
    assert [a["ID"] for a in json_body(client.get(f"/v1/node/{node_id}/allocations"))] == [alloc_id]
    assert [a["ID"] for a in json_body(client.get("/v1/allocations"))] == [alloc_id]
    alloc = client.get(f"/v1/allocation/{alloc_id}").json
    assert alloc is not None
    assert alloc["Job"]["ID"] == "web" and alloc["ClientStatus"] == "running" and alloc["NodeID"] == node_id
    # Nomad's Resources: what the allocation holds on its node (the web UI's utilisation bars sum it).
    assert alloc["Resources"] == {"CPU": 500, "MemoryMB": 256, "DiskMB": 300}
    assert client.get(f"/v1/allocation/{uuid.uuid4()}").status_code == 404
