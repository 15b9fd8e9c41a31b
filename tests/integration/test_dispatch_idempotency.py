"""Dispatch with Nomad's ?idempotency_token= (a retry returns the existing child and creates
nothing), the raw-body /dispatch/payload route, IdPrefixTemplate and Priority."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.support.api import minimal_job
from tests.support.rows import Conn

pytestmark = pytest.mark.integration


def parent(client: FlaskClient, **config: Any) -> None:
    spec = minimal_job("render", Type="batch", Priority=40, ParameterizedJob=config)
    assert client.put("/v1/jobs", json={"Job": spec}).status_code == 200


def counts(pg: Conn) -> tuple[object, ...] | None:
    return pg.execute("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM evaluations)").fetchone()


def dispatched(client: FlaskClient, path: str = "/v1/job/render/dispatch", **kwargs: Any) -> dict[str, Any]:
    resp = client.post(path, **kwargs)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body: dict[str, Any] = resp.json  # type: ignore[assignment]
    return body


def test_a_retry_with_the_same_token_returns_the_first_child(client: FlaskClient, pg: Conn) -> None:
    parent(client)
    first = dispatched(client, "/v1/job/render/dispatch?idempotency_token=job-42", json={})
    after_first = counts(pg)
    again = dispatched(client, "/v1/job/render/dispatch?idempotency_token=job-42", json={})
    assert counts(pg) == after_first  # no second child, no second evaluation
    assert again["DispatchedJobID"] == first["DispatchedJobID"]
    assert (again["EvalID"], again["EvalCreateIndex"]) == ("", 0)
    assert again["JobCreateIndex"] == first["JobCreateIndex"]
    child = client.get(f"/v1/job/{first['DispatchedJobID']}").json
    assert child is not None and child["DispatchIdempotencyToken"] == "job-42"
    other = dispatched(client, "/v1/job/render/dispatch?idempotency_token=job-43", json={})
    untokened = dispatched(client, json={})
    assert len({first["DispatchedJobID"], other["DispatchedJobID"], untokened["DispatchedJobID"]}) == 3


def test_a_purged_child_no_longer_holds_its_token(client: FlaskClient) -> None:
    parent(client)
    first = dispatched(client, "/v1/job/render/dispatch?idempotency_token=t", json={})
    assert client.delete(f"/v1/job/{first['DispatchedJobID']}?purge=true").status_code == 200
    again = dispatched(client, "/v1/job/render/dispatch?idempotency_token=t", json={})
    assert again["DispatchedJobID"] != first["DispatchedJobID"] and again["EvalID"]


def test_concurrent_retries_make_one_child(client: FlaskClient, pg: Conn) -> None:
    parent(client)
    app: Flask = client.application
    answers: list[str] = []

    def send() -> None:
        answers.append(
            dispatched(app.test_client(), "/v1/job/render/dispatch?idempotency_token=same", json={})["DispatchedJobID"]
        )

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 4 and len(set(answers)) == 1
    row = pg.execute("SELECT count(*) FROM jobs WHERE parent_id = 'render'").fetchone()
    assert row == (1,)


def test_the_payload_route_takes_the_raw_body(client: FlaskClient) -> None:
    parent(client, Payload="required")
    body = dispatched(client, "/v1/job/render/dispatch/payload?idempotency_token=raw", data=b"\x00\x01frame")
    child = client.get(f"/v1/job/{body['DispatchedJobID']}").json
    assert child is not None and base64.b64decode(child["Payload"]) == b"\x00\x01frame"
    assert child["DispatchIdempotencyToken"] == "raw"
    empty = client.post("/v1/job/render/dispatch/payload")
    assert empty.status_code == 400 and "Payload" in empty.get_data(as_text=True)
    large = client.post("/v1/job/render/dispatch/payload", data=b"x" * (16 * 1024 + 1))
    assert large.status_code == 400 and "at most 16384 bytes" in large.get_data(as_text=True)


def test_prefix_template_and_priority(client: FlaskClient, pg: Conn) -> None:
    parent(client)
    body = dispatched(client, json={"IdPrefixTemplate": "nightly", "Priority": 70})
    prefix, stamp, suffix = body["DispatchedJobID"].rsplit("-", 2)
    assert prefix == "render/dispatch-nightly" and stamp.isdigit() and len(suffix) == 8
    row = pg.execute("SELECT priority FROM evaluations WHERE id = %s", (body["EvalID"],)).fetchone()
    assert row == (70,)
    inherited = dispatched(client, json={})
    assert pg.execute("SELECT priority FROM evaluations WHERE id = %s", (inherited["EvalID"],)).fetchone() == (40,)
    for field, value in (("IdPrefixTemplate", "a b"), ("Priority", 101), ("JobID", "other")):
        refused = client.post("/v1/job/render/dispatch", json={field: value})
        assert refused.status_code == 400 and field in refused.get_data(as_text=True), field
