"""The servers' side of the link to clients against a rogue node: a real HTTP endpoint that
holds its node's legitimately obtained link key and signs whatever it answers. Nothing it sends
is served as it came (JSON is re-encoded, files are attachments), its answers are read with a
size cap and a total deadline, and only ready nodes are asked. The link key itself comes from
the servers' link secret: the node row (secret hash, address) does not give it."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest
import structlog
from flask.testing import FlaskClient
from pydantic import SecretStr

from app import create_app
from app.acl import client_link as link
from app.api.http import client_proxy
from app.settings.config import Settings
from client.endpoint.logs_http import serve
from tests.support.api import minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
HUGE = 200 * 1024 * 1024
PIECE = b"x" * (1024 * 1024)
HTML = b"<html><body><script>alert(document.cookie)</script></body></html>"


@dataclass
class Rogue:
    """What the rogue endpoint answers, and what it saw and managed to send."""

    key: str = ""
    content_type: str = "text/html"
    body: bytes = b'{"Memory": {"Total": 1}, "Note": "<script>alert(1)</script>"}'
    mode: str = "plain"  # plain | huge | huge-unannounced | trickle
    listing: bytes = b""  # when set, the answer to a directory listing (the log reader lists alloc/logs first)
    requests: list[tuple[str, dict[str, str], str, str]] = field(default_factory=list)  # path, query, proof, stamp
    sent: int = 0
    done: threading.Event = field(default_factory=threading.Event)


def _huge_digest() -> str:
    digest = hashlib.sha256()
    for _ in range(HUGE // len(PIECE)):
        digest.update(PIECE)
    return digest.hexdigest()


def _sign(rogue: Rogue, proof: str, status: int, body_digest: str) -> str:
    import hmac

    message = f"response\n{proof}\n{status}\n{body_digest}".encode()
    return hmac.new(link.key_bytes(rogue.key), message, hashlib.sha256).hexdigest()


def _handler(rogue: Rogue) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            proof = self.headers.get(link.PROOF_HEADER, "")
            rogue.requests.append((url.path, query, proof, self.headers.get(link.TIME_HEADER, "")))
            try:
                self._answer(proof)
            except OSError:
                pass  # the server hung up on us: what the size and time limits are for
            finally:
                rogue.done.set()

        def _answer(self, proof: str) -> None:
            self.send_response(200)
            listing = bool(rogue.listing) and "/fs/ls/" in self.path
            self.send_header("Content-Type", "application/json" if listing else rogue.content_type)
            if rogue.mode == "plain":
                body = rogue.listing if listing else rogue.body
                self.send_header(link.PROOF_HEADER, _sign(rogue, proof, 200, hashlib.sha256(body).hexdigest()))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                rogue.sent += len(body)
                return
            if rogue.mode in ("huge", "huge-unannounced"):
                self.send_header(link.PROOF_HEADER, _sign(rogue, proof, 200, _huge_digest()))
                if rogue.mode == "huge":
                    self.send_header("Content-Length", str(HUGE))
                self.close_connection = True
                self.end_headers()
                for _ in range(HUGE // len(PIECE)):
                    self.wfile.write(PIECE)
                    rogue.sent += len(PIECE)
                return
            body = b"y" * 10_000  # trickle: one byte at a time, each well within the read timeout
            self.send_header(link.PROOF_HEADER, _sign(rogue, proof, 200, hashlib.sha256(body).hexdigest()))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                rogue.sent += 1
                time.sleep(0.05)

    return Handler


@pytest.fixture(autouse=True)
def no_failure_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failures answer at once here: the floor that hides port states only slows these tests."""
    monkeypatch.setattr(client_proxy, "FAILURE_FLOOR_S", 0.0)


@pytest.fixture
def rogue() -> Iterator[tuple[Rogue, str]]:
    state = Rogue()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True).start()
    yield state, f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def strict(database_url: str) -> Iterator[FlaskClient]:
    """An API whose link reads give up after a second and 1 MiB."""
    settings = Settings(
        database_url=database_url,
        link_answer_timeout_s=1.0,
        link_max_answer_bytes=1024 * 1024,
        link_key=SecretStr("k" * 32),
    )
    app = create_app(settings, database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def rogue_node(client: FlaskClient, pg: Conn, rogue: Rogue, address: str, status: str = "ready") -> tuple[str, str]:
    """Register the rogue's node (taking its link key as any client does) with an allocation."""
    node_id = str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, HTTPAddr=address, Status=status)})
    assert reply.status_code == 200 and reply.json is not None, reply.json
    rogue.key = reply.json["LinkKey"]
    job_id = f"web-{node_id[:6]}"
    register(client, minimal_job(job_id))
    eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
    assert eval_id is not None
    alloc_id = insert_allocation(pg, node_id, str(eval_id[0]), job_id=job_id)
    pg.commit()
    return node_id, alloc_id


def test_the_link_key_is_not_derivable_from_the_node_row(
    client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]
) -> None:
    """What a database reader gets (secret hash, address) signs nothing the client would take:
    the servers sign with the key they handed the client, which equals no stored value."""
    state, address = rogue
    node_id, _ = rogue_node(client, pg, state, address)
    row = pg.execute("SELECT secret_hash, http_addr FROM nodes WHERE id = %s", (node_id,)).fetchone()
    assert row is not None and row[1] == address
    assert client.get("/v1/client/stats", query_string={"node_id": node_id}).status_code == 200
    path, query, proof, stamp = state.requests[-1]
    now = time.time()
    assert link.verify_request(link.key_bytes(state.key), "GET", path, query, stamp, proof, now)
    assert not link.verify_request(str(row[0]).encode(), "GET", path, query, stamp, proof, now)
    stored = pg.execute("SELECT count(*) FROM nodes WHERE %s IN (secret_hash, http_addr, id::text)", (state.key,))
    assert stored.fetchone() == (0,)


def test_the_heartbeat_answer_hands_the_key_of_the_current_link_secret(database_url: str) -> None:
    apps = [create_app(Settings(database_url=database_url, link_key=SecretStr(c * 32)), database_url) for c in "ab"]
    try:
        first, second = (app.test_client() for app in apps)
        node_id, secret = uuid.uuid4(), str(uuid.uuid4())
        registered = first.put("/v1/node/register", json={"Node": node_body(str(node_id), SecretID=secret)})
        assert registered.json is not None and registered.json["LinkKey"] == link.node_key(b"a" * 32, node_id)
        beat = first.put(f"/v1/node/{node_id}/heartbeat", json={}, headers={"X-Nomad-Token": secret})
        assert beat.json is not None and beat.json["LinkKey"] == registered.json["LinkKey"]
        rotated = second.put(f"/v1/node/{node_id}/heartbeat", json={}, headers={"X-Nomad-Token": secret})
        assert rotated.json is not None and rotated.json["LinkKey"] == link.node_key(b"b" * 32, node_id)
        refused = second.put(f"/v1/node/{node_id}/heartbeat", json={}, headers={"X-Nomad-Token": "guess"})
        assert refused.status_code == 403 and b"LinkKey" not in refused.data
    finally:
        for app in apps:
            app.extensions["corral"].close()


def test_json_routes_serve_json_the_server_encoded(client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]) -> None:
    state, address = rogue
    node_id, alloc_id = rogue_node(client, pg, state, address)
    routes = [
        ("/v1/client/stats", {"node_id": node_id}),
        (f"/v1/client/fs/ls/{alloc_id}", {}),
        (f"/v1/client/fs/stat/{alloc_id}", {"path": "a"}),
        (f"/v1/client/allocation/{alloc_id}/stats", {}),
    ]
    for route, query in routes:
        reply = client.get(route, query_string=query)
        assert reply.status_code == 200 and reply.content_type == "application/json", route
        assert reply.json == {"Memory": {"Total": 1}, "Note": "<script>alert(1)</script>"}
    state.body, state.content_type = HTML, "application/json"
    for route, query in routes:
        reply = client.get(route, query_string=query)
        assert reply.status_code == 502 and b"<script>" not in reply.data, route
        assert reply.json is not None and node_id in reply.json["detail"]
    state.body = b"[" * 100_000 + b"]" * 100_000  # JSON nested past any parser's recursion
    for route, query in routes:
        reply = client.get(route, query_string=query)
        assert reply.status_code == 502 and reply.json is not None and node_id in reply.json["detail"], route


def test_files_are_attachments_and_plain_logs_are_never_html(
    client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]
) -> None:
    state, address = rogue
    _, alloc_id = rogue_node(client, pg, state, address)
    state.body = HTML
    for route, query in (("cat", {"path": "t/page.html"}), ("readat", {"path": "t/page.html", "offset": 0})):
        reply = client.get(f"/v1/client/fs/{route}/{alloc_id}", query_string=query)
        assert reply.status_code == 200 and reply.data == HTML
        assert reply.content_type == "application/octet-stream"
        assert reply.headers["Content-Disposition"] == "attachment; filename*=UTF-8''page.html"
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
    state.listing = json.dumps([{"Name": "t.stdout.0", "IsDir": False, "Size": len(HTML)}]).encode()
    logs = client.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "plain": "true"})
    assert logs.status_code == 200 and logs.data == HTML
    assert logs.content_type == "text/plain; charset=utf-8" and logs.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("mode", ["huge", "huge-unannounced"])
def test_a_huge_answer_is_refused_before_it_is_read(
    strict: FlaskClient, pg: Conn, rogue: tuple[Rogue, str], mode: str
) -> None:
    state, address = rogue
    node_id, _ = rogue_node(strict, pg, state, address)
    state.mode = mode
    reply = strict.get("/v1/client/stats", query_string={"node_id": node_id})
    assert reply.status_code == 502 and reply.json is not None
    assert reply.json["detail"] == f"the client of node {node_id} at {address} gave no valid answer"
    assert state.done.wait(60)
    assert state.sent < HUGE  # the server hung up: it never took the whole answer in


def test_an_answer_trickling_past_the_deadline_is_cut(strict: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]) -> None:
    state, address = rogue
    node_id, alloc_id = rogue_node(strict, pg, state, address)
    state.mode = "trickle"
    reply = strict.get(f"/v1/client/fs/cat/{alloc_id}", query_string={"path": "t/x"})
    assert reply.status_code == 502 and reply.json is not None and node_id in reply.json["detail"]
    assert state.done.wait(60)
    assert state.sent < 10_000


def test_only_ready_nodes_are_asked(client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]) -> None:
    state, address = rogue
    node_id, alloc_id = rogue_node(client, pg, state, address, status="initializing")
    reply = client.get(f"/v1/client/fs/ls/{alloc_id}")
    assert reply.status_code == 502 and reply.json is not None and "initializing" in reply.json["detail"]
    pg.execute("UPDATE nodes SET status = 'down' WHERE id = %s", (node_id,))
    pg.commit()
    assert client.get("/v1/client/stats", query_string={"node_id": node_id}).status_code == 502
    assert state.requests == []


def test_every_forwarded_request_is_logged_with_its_caller(
    client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]
) -> None:
    state, address = rogue
    node_id, alloc_id = rogue_node(client, pg, state, address)
    with structlog.testing.capture_logs() as logs:
        client.get(f"/v1/client/fs/ls/{alloc_id}")
        client.post(f"/v1/client/allocation/{alloc_id}/signal", json={"Signal": "SIGUSR1"})
    forwarded = [e for e in logs if e["event"] == "client request forwarded"]
    assert [(e["method"], e["path"]) for e in forwarded] == [
        ("GET", f"/v1/client/fs/ls/{alloc_id}"),
        ("POST", f"/v1/client/allocation/{alloc_id}/signal"),
    ]
    for entry in forwarded:
        assert entry["accessor"] == "anonymous" and entry["node_id"] == node_id and entry["alloc_id"] == alloc_id


def test_a_file_bigger_than_the_cap_comes_whole_in_pieces(strict: FlaskClient, pg: Conn, tmp_path: Path) -> None:
    """The cap bounds each answer from a client, not the file: cat, readat and logs page."""
    holder = Rogue()
    dirs: dict[str, Path] = {}
    server = serve("127.0.0.1:0", lambda a: dirs.get(a), lambda: holder.key)
    try:
        _, alloc_id = rogue_node(strict, pg, holder, f"127.0.0.1:{server.server_address[1]}")
        content = bytes(range(256)) * (10 * 1024 + 7)  # 2.5 MiB and a bit, over the 1 MiB cap
        (tmp_path / "alloc" / "logs").mkdir(parents=True)
        (tmp_path / "alloc" / "logs" / "t.stdout.0").write_bytes(content)
        dirs[alloc_id] = tmp_path
        whole = strict.get(f"/v1/client/fs/cat/{alloc_id}", query_string={"path": "alloc/logs/t.stdout.0"})
        assert whole.status_code == 200 and whole.data == content
        part = {"path": "alloc/logs/t.stdout.0", "offset": 5, "limit": 2_000_000}
        assert strict.get(f"/v1/client/fs/readat/{alloc_id}", query_string=part).data == content[5:2_000_005]
        logs = strict.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "plain": "true"})
        assert logs.data == content
    finally:
        server.shutdown()
        server.server_close()


def test_client_stats_without_node_id_asks_the_one_client_on_this_host(
    client: FlaskClient, pg: Conn, rogue: tuple[Rogue, str]
) -> None:
    """Nomad's agent answers with its own client's stats: here, the one ready client that
    advertises an address of this server's host. None, or more than one, is a 400 naming
    node_id with Nomad's message."""
    state, address = rogue
    nobody = client.get("/v1/client/stats")
    assert nobody.status_code == 400 and "No local Node and node_id not provided" in nobody.get_data(as_text=True)
    node_id, _ = rogue_node(client, pg, state, address)
    elsewhere = node_body(str(uuid.uuid4()), HTTPAddr="192.0.2.7:4646")  # TEST-NET: no address of this host
    assert client.put("/v1/node/register", json={"Node": elsewhere}).status_code == 200
    local = client.get("/v1/client/stats")
    assert local.status_code == 200, local.get_data(as_text=True)
    assert state.requests[-1][0] == "/v1/client/stats"
    assert client.get("/v1/client/stats", query_string={"node_id": node_id}).status_code == 200
    second = node_body(str(uuid.uuid4()), HTTPAddr=address.replace("127.0.0.1", "[::1]"))
    assert client.put("/v1/node/register", json={"Node": second}).status_code == 200
    several = client.get("/v1/client/stats")
    assert several.status_code == 400 and "2 ready clients" in several.get_data(as_text=True)
    assert "node_id" in several.get_data(as_text=True)
