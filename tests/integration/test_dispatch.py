"""Dispatching parameterized jobs: the payload and meta checked against the parent's block (a
400 naming the field, nothing written), and the child committed with its evaluation."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job
from tests.support.rows import Conn

pytestmark = pytest.mark.integration


def parent(client: FlaskClient, job_id: str = "render", **config: Any) -> None:
    spec = minimal_job(job_id, Type="batch", Meta={"owner": "ops"}, ParameterizedJob=config)
    body = client.put("/v1/jobs", json={"Job": spec}).json
    assert body is not None and body["EvalID"] == ""  # the parent itself is never placed


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def counts(pg: Conn) -> tuple[Any, ...] | None:
    return pg.execute("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM evaluations)").fetchone()


def test_dispatch_creates_the_child_and_its_evaluation_together(client: FlaskClient, pg: Conn) -> None:
    parent(client, Payload="required", MetaRequired=["input"], MetaOptional=["hint"])
    response = client.post(
        "/v1/job/render/dispatch", json={"Payload": b64(b"frame 1"), "Meta": {"input": "a.png", "hint": "fast"}}
    )
    assert response.status_code == 200, response.json
    body = response.json
    assert body is not None
    assert set(body) == {"DispatchedJobID", "EvalID", "EvalCreateIndex", "JobCreateIndex", "Index"}
    child = body["DispatchedJobID"]
    prefix, stamp, suffix = child.rsplit("-", 2)
    assert prefix == "render/dispatch" and stamp.isdigit() and len(suffix) == 8
    int(suffix, 16)
    row = pg.execute(
        "SELECT e.job_id, e.triggered_by, e.create_index, j.create_index, j.parent_id, j.dispatched, j.parameterized "
        "FROM evaluations e JOIN jobs j ON j.namespace = e.namespace AND j.id = e.job_id WHERE e.id = %s",
        (body["EvalID"],),
    ).fetchone()
    assert row == (child, "job-register", body["Index"], body["Index"], "render", True, True)
    assert body["EvalCreateIndex"] == body["JobCreateIndex"] == body["Index"]
    spec = client.get(f"/v1/job/{child}").json
    assert spec is not None
    assert spec["ParentID"] == "render" and spec["Dispatched"] is True
    assert spec["Meta"] == {"owner": "ops", "input": "a.png", "hint": "fast"}
    assert base64.b64decode(spec["Payload"]) == b"frame 1"
    summary = client.get("/v1/job/render/summary").json
    assert summary is not None and summary["Children"]["Pending"] == 1


def test_two_dispatches_get_two_children(client: FlaskClient, pg: Conn) -> None:
    parent(client)
    first = client.put("/v1/job/render/dispatch", json={}).json
    second = client.put("/v1/job/render/dispatch").json
    assert first is not None and second is not None
    assert first["DispatchedJobID"] != second["DispatchedJobID"]
    assert counts(pg) == (3, 2)


@pytest.mark.parametrize(
    ("config", "body", "field", "message"),
    [
        ({"MetaRequired": ["input"]}, {"Meta": {}}, "Meta.input", "is required"),
        ({"MetaRequired": ["input"]}, {"Meta": {"input": "x", "bogus": "y"}}, "Meta.bogus", "is not allowed"),
        ({"MetaOptional": ["hint"]}, {"Meta": {"other": "y"}}, "Meta.other", "is not allowed"),
        ({}, {"Meta": {"any": "y"}}, "Meta.any", "is not allowed"),
        ({"Payload": "required"}, {}, "Payload", "is required"),
        ({"Payload": "forbidden"}, {"Payload": b64(b"x")}, "Payload", "is not allowed"),
        ({}, {"Payload": b64(b"x" * (16 * 1024 + 1))}, "Payload", "must be at most 16384 bytes"),
        ({}, {"Payload": "not base64!"}, "Payload", "must be valid base64"),
        ({}, {"Payload": 12}, "Payload", "must be a base64 string"),
        ({}, {"Meta": ["a"]}, "Meta", "must be an object"),
        ({"MetaOptional": ["n"]}, {"Meta": {"n": 1}}, "Meta.n", "must be a string"),
    ],
)
def test_bad_dispatches_are_400_naming_the_field_and_write_nothing(
    client: FlaskClient, pg: Conn, config: dict[str, Any], body: dict[str, Any], field: str, message: str
) -> None:
    parent(client, **config)
    before = counts(pg)
    response = client.post("/v1/job/render/dispatch", json=body)
    assert response.status_code == 400, response.json
    assert response.json is not None
    found = {e["field"]: e["message"] for e in response.json["errors"]}
    assert field in found and message in found[field], found
    assert counts(pg) == before


def test_a_payload_of_exactly_the_limit_is_accepted(client: FlaskClient) -> None:
    parent(client, Payload="required")
    response = client.post("/v1/job/render/dispatch", json={"Payload": b64(b"x" * 16 * 1024)})
    assert response.status_code == 200, response.json


def test_every_missing_and_unknown_key_is_named(client: FlaskClient) -> None:
    parent(client, MetaRequired=["a", "b"])
    response = client.post("/v1/job/render/dispatch", json={"Meta": {"c": "1"}})
    assert response.status_code == 400
    assert response.json is not None
    assert {e["field"] for e in response.json["errors"]} == {"Meta.a", "Meta.b", "Meta.c"}


@pytest.mark.parametrize(("job", "status"), [("plain", 400), ("missing", 404), ("stopped", 400)])
def test_only_live_parameterized_jobs_dispatch(client: FlaskClient, pg: Conn, job: str, status: int) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("plain", Type="batch")})
    parent(client, "stopped")
    client.delete("/v1/job/stopped")
    before = counts(pg)
    response = client.post(f"/v1/job/{job}/dispatch", json={})
    assert response.status_code == status, response.json
    assert response.json is not None and response.json["errors"][0]["field"] == "JobID"
    assert counts(pg) == before


def test_a_dispatched_child_cannot_be_dispatched(client: FlaskClient) -> None:
    parent(client)
    child = client.post("/v1/job/render/dispatch", json={}).json
    assert child is not None
    response = client.post(f"/v1/job/{child['DispatchedJobID']}/dispatch", json={})
    assert response.status_code == 400
