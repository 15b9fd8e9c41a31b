"""Blocking queries: ?index= waits for a newer commit, ?wait= bounds it, X-Nomad-Index on every read."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.db.engines import libpq_url
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.processes import wait_for

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
        result["ids"] = [j["ID"] for j in json_body(resp)]

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


def test_a_request_that_finds_every_pooled_connection_busy_gets_503_with_retry_after(database_url: str) -> None:
    settings = Settings(database_url=database_url, http_db_pool_size=1, http_db_pool_timeout_s=0.2)
    app = create_app(settings, database_url)
    state = app.extensions["corral"]
    try:
        with state.engine.connect():  # the ordinary lane's only connection
            busy = app.test_client().get("/v1/jobs")
            assert busy.status_code == 503
            assert busy.headers["Retry-After"] == "1"
            assert "database connection" in busy.get_json()["detail"]
            # Client traffic has its own pool: health still answers.
            assert app.test_client().get("/v1/agent/health").status_code == 200
        assert app.test_client().get("/v1/jobs").status_code == 200
    finally:
        state.close()


def test_a_nodes_allocation_query_wakes_for_that_node_only(client: FlaskClient) -> None:
    first, other = str(uuid.uuid4()), str(uuid.uuid4())
    for node_id in (first, other):
        assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    index = int(client.get(f"/v1/node/{first}/allocations").headers["X-Nomad-Index"])
    watcher = client.application.extensions["corral"].watcher
    result: dict[str, int] = {}

    def block() -> None:
        resp = client.get(f"/v1/node/{first}/allocations?index={index}&wait=290s")
        result["index"] = int(resp.headers["X-Nomad-Index"])

    waiter = threading.Thread(target=block)
    waiter.start()
    # Another node's change moves the allocations/nodes index but must not wake this query.
    assert wait_for(lambda: watcher._node_base is not None, 30)
    changed = client.put(f"/v1/node/{other}/eligibility", json={"Eligibility": "ineligible"})
    other_index = int(json_body(changed)["Index"])
    assert wait_for(lambda: watcher._node_level >= other_index, 30)
    waiter.join(timeout=1)
    assert waiter.is_alive()
    client.put(f"/v1/node/{first}/eligibility", json={"Eligibility": "ineligible"})
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert result["index"] > other_index


def test_a_nodes_query_wakes_for_a_change_made_while_the_watcher_was_disconnected(database_url: str) -> None:
    """The watcher's connection dies (a restarted or terminated backend) and the node changes
    before it reconnects: the change was never tracked, so the watcher must send the node's
    waiters back to look, not leave them asleep until their wait (here 290 s) runs out."""
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=300), database_url)
    state = app.extensions["corral"]
    client = app.test_client()
    try:
        node_id = str(uuid.uuid4())
        assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
        index = int(client.get(f"/v1/node/{node_id}/allocations").headers["X-Nomad-Index"])
        result: dict[str, int] = {}

        def block() -> None:
            resp = client.get(f"/v1/node/{node_id}/allocations?index={index}&wait=290s")
            result["index"] = int(resp.headers["X-Nomad-Index"])

        waiter = threading.Thread(target=block, daemon=True)
        waiter.start()
        watcher = state.watcher
        assert wait_for(lambda: watcher._node_base is not None and bool(watcher._node_waiters), 30)
        with psycopg.connect(libpq_url(database_url), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'corral-api-index-watcher' AND datname = current_database()"
            )
        assert wait_for(lambda: watcher._node_base is None, 30)
        changed = client.put(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "ineligible"})
        changed_index = int(changed.json["Index"])
        waiter.join(timeout=30)
        assert not waiter.is_alive(), "the node's query slept through a change made while the watcher was away"
        assert result["index"] >= changed_index
    finally:
        state.close()


def test_a_path_no_route_serves_carries_no_index(client: FlaskClient) -> None:
    """As in Nomad, whose fallthrough handler sets no index: the answer reads no state."""
    for method in ("get", "put"):
        resp = getattr(client, method)("/v1/no-such-route")
        assert resp.status_code == 404
        assert "X-Nomad-Index" not in resp.headers
    wrong_method = client.delete("/v1/jobs")
    assert wrong_method.status_code == 405 and "X-Nomad-Index" not in wrong_method.headers
