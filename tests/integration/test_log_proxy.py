"""The log proxy (GET /v1/client/fs/logs/:alloc) only talks to the address a node registered,
only in host:port form, proves itself to the client and relays only answers the client signed:
a node advertising some other service gets nothing back, and errors read the same whether the
port is closed, answers or never answers (the node and its address named); a follow of a
finished allocation drains and ends."""

from __future__ import annotations

import base64
import json
import socket
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import pytest
from flask.testing import FlaskClient

from app.api.http import client_proxy
from client.endpoint.logs_http import serve
from tests.support.api import minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


class _Secret(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"internal secret page"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def other_service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Secret)
    threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def node_with_alloc(
    client: FlaskClient, pg: Conn, http_addr: str, secret: str | None = None, keys: dict[str, str] | None = None
) -> tuple[str, str]:
    """A node at http_addr with an allocation; its link key (from the registration answer, as a
    client gets it) goes into `keys` under "link"."""
    node_id = str(uuid.uuid4())
    fields = {"HTTPAddr": http_addr, **({"SecretID": secret} if secret else {})}
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, **fields)})
    assert reply.status_code == 200, reply.json
    assert reply.json is not None
    if keys is not None:
        keys["link"] = reply.json["LinkKey"]
    eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
    assert eval_id is not None
    alloc_id = insert_allocation(pg, node_id, str(eval_id[0]))
    pg.commit()
    return node_id, alloc_id


def test_registration_refuses_an_address_with_a_path_or_query(client: FlaskClient) -> None:
    body = node_body(str(uuid.uuid4()), HTTPAddr="http://127.0.0.1:4646/v1/agent/self?x=")
    reply = client.put("/v1/node/register", json={"Node": body})
    assert reply.status_code == 400
    assert reply.json is not None and reply.json["errors"][0]["field"] == "Node.HTTPAddr"


def test_proxy_relays_nothing_from_another_service_and_hides_the_network(
    client: FlaskClient, pg: Conn, other_service: str
) -> None:
    register(client, minimal_job("web"))
    foreign_node, foreign = node_with_alloc(client, pg, other_service)
    closed_address = closed_port()
    closed_node, closed = node_with_alloc(client, pg, closed_address)
    answers = []
    for alloc_id, node_id, address in ((foreign, foreign_node, other_service), (closed, closed_node, closed_address)):
        reply = client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "plain": "true"})
        assert reply.status_code == 502
        assert b"internal secret page" not in reply.data
        detail = reply.json["detail"] if reply.json else ""
        assert address in detail and node_id in detail  # the operator learns which client to look at
        answers.append(detail.replace(address, "<address>").replace(node_id, "<node>"))
    assert answers[0] == answers[1]


def test_proxy_reads_logs_from_the_nodes_own_client(client: FlaskClient, pg: Conn, tmp_path: Path) -> None:
    register(client, minimal_job("web"))
    secret = str(uuid.uuid4())
    dirs: dict[str, Path] = {}
    keys: dict[str, str] = {}
    server = serve("127.0.0.1:0", lambda a: dirs.get(a), lambda: keys.get("link", ""))
    try:
        _, alloc_id = node_with_alloc(client, pg, f"127.0.0.1:{server.server_address[1]}", secret, keys)
        logs = tmp_path / "alloc" / "logs"
        logs.mkdir(parents=True)
        (logs / "t.stdout.0").write_text("from the task\n")
        dirs[alloc_id] = tmp_path
        reply = client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "plain": "true"})
        assert reply.status_code == 200 and reply.data == b"from the task\n"
        missing = client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "nope", "plain": "true"})
        assert missing.status_code == 404  # the client's own signed answer is relayed
    finally:
        server.shutdown()
        server.server_close()


def test_follow_of_a_finished_allocation_drains_the_log_in_frames_and_ends(
    client: FlaskClient, pg: Conn, tmp_path: Path
) -> None:
    register(client, minimal_job("web"))
    secret = str(uuid.uuid4())
    dirs: dict[str, Path] = {}
    keys: dict[str, str] = {}
    server = serve("127.0.0.1:0", lambda a: dirs.get(a), lambda: keys.get("link", ""))
    try:
        _, alloc_id = node_with_alloc(client, pg, f"127.0.0.1:{server.server_address[1]}", secret, keys)
        (tmp_path / "alloc" / "logs").mkdir(parents=True)
        (tmp_path / "alloc" / "logs" / "t.stdout.0").write_text("first\nlast\n")
        dirs[alloc_id] = tmp_path
        pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (alloc_id,))
        pg.commit()
        reply = client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "follow": "true"})
        assert reply.status_code == 200
        frame = json.loads(reply.data)  # one frame, then the stream ends: nothing more will come
        assert base64.b64decode(frame["Data"]) == b"first\nlast\n" and frame["Offset"] == 11
        assert frame["File"] == "alloc/logs/t.stdout.0"
        ending = client.get(
            f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "origin": "end", "offset": 5, "plain": "1"}
        )
        assert ending.data == b"last\n"
        # A log not written yet: a follow waits for it (here: only a heartbeat, as the task is over).
        waited = client.get(
            f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "type": "stderr", "follow": "1"}
        )
        assert waited.status_code == 200 and waited.data == b"{}"
        assert (
            client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "type": "stderr"}).status_code
            == 404
        )
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_that_accepts_but_never_answers_is_the_same_502_naming_it(
    client: FlaskClient, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_proxy, "READ_TIMEOUT_S", 0.5)
    register(client, minimal_job("web"))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        node_id, alloc_id = node_with_alloc(client, pg, address)
        reply = client.get(f"/v1/client/fs/ls/{alloc_id}")
    assert reply.status_code == 502 and reply.json is not None
    assert reply.json["detail"] == f"the client of node {node_id} at {address} gave no valid answer"
