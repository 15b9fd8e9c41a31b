"""The client's own HTTP endpoint. The servers proxy Nomad's client routes here (logs, the
allocation directory, usage, restart and signal: see http_api.py), to the node's advertised
HTTPAddr, so each answer comes from the node that runs the allocation, on one host or many."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import structlog

from app.acl import client_link as link
from app.stream import websocket as wsock
from client.allocs.alloc_runner import AllocRunner
from client.endpoint import exec_http
from client.endpoint.alloc_fs import FsError
from client.endpoint.http_api import Local, route
from client.node_meta import NodeMeta

log = structlog.get_logger(__name__)


class SeenProofs:
    """The proofs of acts (restart, signal) already done, kept as long as they would verify:
    a captured request replayed within the allowed clock skew does not act again."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, proof: str, now: float) -> bool:
        with self._lock:
            self._until = {p: t for p, t in self._until.items() if t > now}
            if proof in self._until:
                return False
            self._until[proof] = now + 2 * link.MAX_SKEW_S
            return True


def serve(
    bind: str,
    alloc_dir_of: Callable[[str], Path | None],
    link_key_of: Callable[[], str],
    runner_of: Callable[[str], AllocRunner | None] = lambda _: None,
    data_dir: Path | None = None,
    node_meta: NodeMeta | None = None,
    apply_meta: Callable[[Mapping[str, str | None]], None] | None = None,
    collect: Callable[[str], bool] | None = None,
    collect_all: Callable[[], int] | None = None,
) -> ThreadingHTTPServer:
    """Start the endpoint in a daemon thread; port 0 picks a free one (see server_address).
    Every request must carry the servers' proof (app/acl/client_link.py), keyed by this node's
    link key as the servers last handed it (`link_key_of`; empty: nothing is served); every
    answer carries this client's proof in return."""
    local = Local(alloc_dir_of, runner_of, data_dir or Path("."), node_meta, apply_meta, collect, collect_all)
    seen = SeenProofs()

    def key() -> bytes:
        found = link_key_of()
        return link.key_bytes(found) if found else b""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        proof = ""

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            signing = key()
            if self.proof and signing:
                self.send_header(link.PROOF_HEADER, link.response_proof(signing, self.proof, status, body))
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _fail(self, status: int, field: str, message: str) -> None:
            body = json.dumps({"status": status, "errors": [{"field": field, "message": message}]}).encode()
            self._answer(status, body, "application/problem+json")

        def _handle(self, method: str) -> None:
            url = urlparse(self.path)
            exec_match = exec_http.PATH.match(url.path) if method == "GET" else None
            found = route(method, url.path)
            if found is None and exec_match is None:
                return self._fail(404, "", f"no route {method} {url.path}")
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            offered = self.headers.get(link.PROOF_HEADER, "")
            stamp = self.headers.get(link.TIME_HEADER, "")
            now = time.time()
            if not link.verify_request(key(), method, url.path, query, stamp, offered, now):
                return self._fail(403, "", "Permission denied")
            if (method != "GET" or exec_match) and not seen.first_use(offered, now):
                return self._fail(403, "", "Permission denied: this request was already served")
            self.proof = offered
            if exec_match is not None:
                return self._exec(exec_match.group(1), query)
            assert found is not None
            handler, alloc_id = found
            try:
                status, body, content_type = handler(local, alloc_id, query)
            except FsError as err:
                return self._fail(err.status, err.field, err.message)
            except Exception:  # answered, not dropped: the server would otherwise wait out its timeout
                log.exception("client endpoint failed", path=url.path)
                return self._fail(500, "", "the client failed to answer; see its log")
            return self._answer(status, body, content_type)

        def _exec(self, alloc_id: str, query: dict[str, str]) -> None:
            """Start the command, then answer the upgrade (signed) and serve the session on
            this connection; a refusal is an ordinary signed answer."""
            headers = {name.lower(): value for name, value in self.headers.items()}
            if not wsock.wants_upgrade(headers):
                return self._fail(400, "Upgrade", "alloc exec is a WebSocket: send Upgrade: websocket")
            try:
                session = exec_http.prepare(local, alloc_id, query)
            except FsError as err:
                return self._fail(err.status, err.field, err.message)
            proof = link.response_proof(key(), self.proof, 101, b"")
            self.close_connection = True
            try:
                self.wfile.write(wsock.accept_response(headers["sec-websocket-key"], {link.PROOF_HEADER: proof}))
                self.wfile.flush()
            except OSError:
                session.kill()
                return None
            log.info("alloc exec session started", alloc_id=alloc_id, task=query.get("task"), pid=session.pid)
            session.run(wsock.WebSocket.server(self.connection))
            return None

        def do_GET(self) -> None:
            self._handle("GET")

        def do_PUT(self) -> None:
            self._handle("PUT")

    host, _, port = bind.rpartition(":")
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    # shutdown() waits up to one poll interval: 0.1 s rather than 0.5 s off the client's stop.
    threading.Thread(target=server.serve_forever, args=(0.1,), name="client-http", daemon=True).start()
    return server
