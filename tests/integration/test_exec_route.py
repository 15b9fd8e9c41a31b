"""GET /v1/client/allocation/:id/exec checks its input before anything is upgraded or proxied:
each refusal is an ordinary 4xx naming the field, for a plain GET and for an Upgrade request
alike (Werkzeug routes the two to separate rules of the one view)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


@pytest.fixture
def alloc_id(client: FlaskClient, pg: Conn) -> str:
    register(client, minimal_job("web"))
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
    assert eval_id is not None
    found = insert_allocation(pg, node_id, str(eval_id[0]))
    pg.commit()
    return found


def field_of(client: FlaskClient, alloc: str, headers: dict[str, str], **params: Any) -> tuple[int, str]:
    query = {"task": "t", "command": '["ls"]', **params}
    reply = client.get(f"/v1/client/allocation/{alloc}/exec", query_string=query, headers=headers)
    assert reply.json is not None, reply.data
    return reply.status_code, str(reply.json["errors"][0]["field"])


@pytest.mark.parametrize("headers", [{}, UPGRADE], ids=["plain", "upgrade"])
def test_bad_input_is_refused_naming_the_field(client: FlaskClient, alloc_id: str, headers: dict[str, str]) -> None:
    for params, wanted in (
        ({"task": ""}, "task"),
        ({"task": "nope"}, "task"),
        ({"command": ""}, "command"),
        ({"command": "[]"}, "command"),
        ({"command": '[""]'}, "command"),
        ({"command": "ls"}, "command"),
        ({"command": '["ls", 1]'}, "command"),
        ({"command": '{"a": 1}'}, "command"),
        ({"command": "[" + '"x",' * 20_000 + '"x"]'}, "command"),
        ({"tty": "maybe"}, "tty"),
    ):
        assert field_of(client, alloc_id, headers, **params) == (400, wanted), params
    assert field_of(client, str(uuid.uuid4()), headers) == (404, "AllocID")
    assert field_of(client, "not-a-uuid", headers) == (400, "AllocID")


def test_a_valid_request_still_needs_a_websocket_on_gunicorn(client: FlaskClient, alloc_id: str) -> None:
    assert field_of(client, alloc_id, {}) == (400, "Upgrade")  # a plain GET
    status, wanted = field_of(client, alloc_id, UPGRADE)  # the test client hands over no socket
    assert (status, wanted) == (400, "Upgrade")


def test_ws_handshake_defers_the_acl_check_to_the_first_frame(database_url: str, pg: Conn) -> None:
    """With ?ws_handshake=true the token comes in the first WebSocket frame, so the request is
    not refused for having no X-Nomad-Token: it reaches the route (which then needs a socket to
    upgrade). Without the flag, or with a flag that is no boolean, the headers decide."""
    app = create_app(Settings(database_url=database_url, acl_enabled=True), database_url)
    try:
        api = app.test_client()
        root = {"X-Nomad-Token": api.post("/v1/acl/bootstrap").json["SecretID"]}
        assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=root).status_code == 200
        node_id = str(uuid.uuid4())
        assert api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=root).status_code == 200
        eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
        assert eval_id is not None
        alloc = insert_allocation(pg, node_id, str(eval_id[0]))
        pg.commit()
        path = f"/v1/client/allocation/{alloc}/exec"
        query = {"task": "t", "command": '["ls"]'}
        anonymous = api.get(path, query_string=query, headers=UPGRADE)
        assert anonymous.status_code == 403
        for flag in ("true", "1"):
            deferred = api.get(path, query_string={**query, "ws_handshake": flag}, headers=UPGRADE)
            assert deferred.status_code == 400 and deferred.json["errors"][0]["field"] == "Upgrade"
        assert api.get(path, query_string={**query, "ws_handshake": "false"}, headers=UPGRADE).status_code == 403
        assert api.get(path, query_string={**query, "ws_handshake": "maybe"}, headers=UPGRADE).status_code == 403
        bad_flag = api.get(path, query_string={**query, "ws_handshake": "maybe"}, headers={**UPGRADE, **root})
        assert bad_flag.status_code == 400 and bad_flag.json["errors"][0]["field"] == "ws_handshake"
    finally:
        app.extensions["corral"].close()
