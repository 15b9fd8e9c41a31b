"""Blocking queries: ?index= waits for a newer commit, ?wait= bounds it, X-Nomad-Index on every read."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job

pytestmark = pytest.mark.integration


def test_blocking_list_wakes_on_commit(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("first")})
    first = client.get("/v1/jobs")
    index = int(first.headers["X-Nomad-Index"])
    result: dict[str, Any] = {}
    started = threading.Event()

    def block() -> None:
        started.set()
        # A wait far beyond the test timeout: only the write can end this request.
        resp = client.get(f"/v1/jobs?index={index}&wait=290s")
        result["index"] = int(resp.headers["X-Nomad-Index"])
        result["ids"] = [j["ID"] for j in resp.json]  # type: ignore[union-attr]

    waiter = threading.Thread(target=block)
    waiter.start()
    started.wait()
    client.put("/v1/jobs", json={"Job": minimal_job("second")})
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert result["index"] > index
    assert result["ids"] == ["first", "second"]


def test_blocking_read_times_out_with_same_index(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    index = int(client.get("/v1/job/web").headers["X-Nomad-Index"])
    resp = client.get(f"/v1/job/web?index={index}&wait=200ms")
    assert resp.status_code == 200
    assert int(resp.headers["X-Nomad-Index"]) == index


def test_unrelated_table_does_not_wake_a_job_query(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    index = int(client.get("/v1/job/web").headers["X-Nomad-Index"])
    client.put("/v1/operator/scheduler/configuration", json={"SchedulerAlgorithm": "spread"})
    resp = client.get(f"/v1/job/web?index={index}&wait=300ms")
    assert int(resp.headers["X-Nomad-Index"]) == index


@pytest.mark.parametrize(
    "path",
    ["/v1/jobs", "/v1/evaluations", "/v1/allocations", "/v1/nodes", "/v1/operator/scheduler/configuration"],
)
def test_every_read_carries_x_nomad_index(client: FlaskClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 200
    assert int(resp.headers["X-Nomad-Index"]) >= 1


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("get", "/v1/job/missing", 404), ("put", "/v1/jobs", 400), ("get", "/v1/evaluations?status=odd", 400)],
)
def test_errors_carry_x_nomad_index_too(client: FlaskClient, method: str, path: str, status: int) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    resp = getattr(client, method)(path, json={"Job": {}} if method == "put" else None)
    assert resp.status_code == status
    assert int(resp.headers["X-Nomad-Index"]) >= 2
