"""Cross-site protection through the Flask app: a write with a body a web page can send without
asking (text/plain, form, multipart) is a 415, a foreign Origin may neither write nor open an
exec WebSocket (403), a loopback API answers no rebound name (421) unless configured, and the
answers carry nosniff, the UI's CSP and no-store on token routes. Nothing is written on a refusal."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
EVIL = "http://evil.example"
UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


@pytest.fixture
def make_app(database_url: str) -> Iterator[Any]:
    made: list[Flask] = []

    def make(**settings: Any) -> FlaskClient:
        app = create_app(Settings(database_url=database_url, **settings), database_url)
        made.append(app)
        client: FlaskClient = app.test_client()
        return client

    yield make
    for app in made:
        app.extensions["corral"].close()


def job_body() -> bytes:
    return json.dumps({"Job": minimal_job()}).encode()


def problem_field(resp: Any) -> str:
    assert resp.content_type == "application/problem+json", resp.data
    return str(resp.json["errors"][0]["field"])


def jobs_written(pg: Conn) -> int:
    row = pg.execute("SELECT count(*) FROM jobs").fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


# --- Content-Type ----------------------------------------------------------------------------


PAGE_TYPES = ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data"]


@pytest.mark.parametrize("content_type", PAGE_TYPES)
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_a_body_a_page_could_send_is_415(client: FlaskClient, pg: Conn, method: str, content_type: str) -> None:
    resp = client.open("/v1/jobs", method=method, data=job_body(), headers={"Content-Type": content_type})
    assert resp.status_code == 415 and problem_field(resp) == "Content-Type"
    assert content_type in json_body(resp)["detail"]
    assert jobs_written(pg) == 0


def test_json_or_no_content_type_still_registers(client: FlaskClient, pg: Conn) -> None:
    assert client.post("/v1/jobs", data=job_body()).status_code == 200  # Nomad's Go client: no type
    headers = {"Content-Type": "application/json; charset=utf-8"}
    assert client.put("/v1/jobs", data=job_body(), headers=headers).status_code == 200
    assert jobs_written(pg) == 1


def test_an_empty_write_may_carry_any_content_type(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    resp = client.post("/v1/job/web/evaluate", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 200, resp.json


# --- Origin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", [EVIL, "null", "http://localhost:4647"])
def test_a_write_from_a_foreign_origin_is_403(client: FlaskClient, pg: Conn, origin: str) -> None:
    resp = client.put("/v1/jobs", json={"Job": minimal_job()}, headers={"Origin": origin})
    assert resp.status_code == 403 and problem_field(resp) == "Origin"
    assert jobs_written(pg) == 0


def test_a_write_from_the_api_s_own_origin_passes(client: FlaskClient, pg: Conn) -> None:
    # The UI's fetch: same origin as the Host it was served from.
    resp = client.put("/v1/jobs", json={"Job": minimal_job()}, headers={"Origin": "http://localhost"})
    assert resp.status_code == 200, resp.json
    assert jobs_written(pg) == 1


def test_a_read_from_a_foreign_origin_passes(client: FlaskClient) -> None:
    assert client.get("/v1/jobs", headers={"Origin": EVIL}).status_code == 200


def test_a_configured_origin_may_write(make_app: Any, pg: Conn) -> None:
    api = make_app(http_allowed_origins=EVIL)
    assert api.put("/v1/jobs", json={"Job": minimal_job()}, headers={"Origin": EVIL}).status_code == 200
    assert api.put("/v1/jobs", json={"Job": minimal_job()}, headers={"Origin": "http://x.example"}).status_code == 403


def test_an_exec_upgrade_from_a_foreign_origin_is_403(client: FlaskClient) -> None:
    url = f"/v1/client/allocation/{uuid.uuid4()}/exec"
    query = {"task": "t", "command": '["sh"]'}
    refused = client.get(url, query_string=query, headers={**UPGRADE, "Origin": EVIL})
    assert refused.status_code == 403 and problem_field(refused) == "Origin"
    # Without an Origin (the CLI, Nomad's client) the request reaches the route, which looks
    # for the allocation.
    passed = client.get(url, query_string=query, headers=UPGRADE)
    assert passed.status_code == 404 and problem_field(passed) == "AllocID"


# --- Host ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/jobs", "/ui/", "/v1/agent/self"])
def test_a_loopback_api_refuses_a_rebound_name(client: FlaskClient, path: str) -> None:
    resp = client.get(path, headers={"Host": "evil.example:4646"})
    assert resp.status_code == 421 and problem_field(resp) == "Host"
    assert "evil.example:4646" in json_body(resp)["detail"]


def test_the_drive_by_writes_nothing(client: FlaskClient, pg: Conn) -> None:
    headers = {"Content-Type": "text/plain", "Origin": EVIL, "Host": "evil.example:4646"}
    resp = client.post("/v1/jobs", data=job_body(), headers=headers)
    assert resp.status_code == 421
    assert jobs_written(pg) == 0


def test_a_configured_host_reaches_a_loopback_api(make_app: Any) -> None:
    api = make_app(http_allowed_hosts="corral.test")
    assert api.get("/v1/jobs", headers={"Host": "corral.test:4646"}).status_code == 200
    assert api.get("/v1/jobs", headers={"Host": "127.0.0.1:4646"}).status_code == 200
    assert api.get("/v1/jobs", headers={"Host": "evil.example:4646"}).status_code == 421


def test_a_wildcard_bind_answers_any_name_until_hosts_are_set(make_app: Any) -> None:
    assert make_app(bind="0.0.0.0:4646").get("/v1/jobs", headers={"Host": "server:4646"}).status_code == 200
    pinned = make_app(bind="0.0.0.0:4646", http_allowed_hosts="corral.example")
    assert pinned.get("/v1/jobs", headers={"Host": "server:4646"}).status_code == 421
    assert pinned.get("/v1/jobs", headers={"Host": "corral.example"}).status_code == 200


# --- headers ---------------------------------------------------------------------------------


def test_every_answer_is_nosniff(client: FlaskClient) -> None:
    for resp in (
        client.get("/v1/jobs"),
        client.get("/v1/job/missing"),
        client.get("/v1/no/such/route"),
        client.put("/v1/jobs", data=b"x", headers={"Content-Type": "text/plain"}),
        client.get("/ui/static/ui.js"),
    ):
        assert resp.headers["X-Content-Type-Options"] == "nosniff", resp.request.path


def test_ui_pages_carry_a_strict_policy(client: FlaskClient) -> None:
    page = client.get("/ui/jobs")
    assert page.status_code == 200
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe" not in policy
    assert page.headers["X-Frame-Options"] == "DENY" and page.headers["Referrer-Policy"] == "no-referrer"
    assert "Content-Security-Policy" not in client.get("/v1/jobs").headers


def test_token_answers_are_not_stored(make_app: Any) -> None:
    api = make_app(acl_enabled=True)
    boot = api.post("/v1/acl/bootstrap")
    assert boot.status_code == 200 and boot.json["SecretID"]
    assert boot.headers["Cache-Control"] == "no-store"
    root = {"X-Nomad-Token": boot.json["SecretID"]}
    for resp in (
        api.get("/v1/acl/token/self", headers=root),
        api.get("/v1/acl/tokens", headers=root),
        api.put("/v1/acl/token", json={"Name": "n", "Type": "management"}, headers=root),
    ):
        assert resp.status_code == 200 and resp.headers["Cache-Control"] == "no-store", resp.request.path
    assert "no-store" not in api.get("/v1/jobs", headers=root).headers.get("Cache-Control", "")
