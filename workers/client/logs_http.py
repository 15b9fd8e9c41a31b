"""The client's own HTTP endpoint for allocation logs. The servers proxy
`GET /v1/client/fs/logs/:alloc_id` here (to the node's advertised HTTPAddr), so logs stay on
the node that wrote them, on one host or many."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from app.acl import client_link as link

ROUTE = re.compile(r"^/v1/client/fs/logs/([0-9a-f-]{36})$")
TASK_NAME = re.compile(r"^[^/\\\x00]+$")


def read_log(alloc_dir: Path, task: str, kind: str, origin: str, offset: int) -> bytes:
    path = alloc_dir / "alloc" / "logs" / f"{task}.{kind}.0"
    data = path.read_bytes()
    return data[offset:] if origin == "start" else data[max(0, len(data) - offset) :]


def serve(bind: str, alloc_dir_of: Callable[[str], Path | None], secret_of: Callable[[], str]) -> ThreadingHTTPServer:
    """Start the log endpoint in a daemon thread; port 0 picks a free one (see server_address).
    Every request must carry the servers' proof (app/acl/client_link.py), keyed by the hash of
    this node's secret (`secret_of`); every answer carries this client's proof in return."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        proof = ""

        def _sign(self, status: int, body: bytes) -> None:
            secret = secret_of()
            if self.proof and secret:
                self.send_header(
                    link.PROOF_HEADER, link.response_proof(link.key_from_secret(secret), self.proof, status, body)
                )

        def _fail(self, status: int, field: str, message: str) -> None:
            body = json.dumps({"status": status, "errors": [{"field": field, "message": message}]}).encode()
            self.send_response(status)
            self._sign(status, body)
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            match = ROUTE.match(url.path)
            if match is None:
                return self._fail(404, "", f"no route {url.path}")
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            secret = secret_of()
            offered = self.headers.get(link.PROOF_HEADER, "")
            stamp = self.headers.get(link.TIME_HEADER, "")
            key = link.key_from_secret(secret) if secret else b""
            if not link.verify_request(key, "GET", url.path, query, stamp, offered, time.time()):
                return self._fail(403, "", "Permission denied")
            self.proof = offered
            task, kind = query.get("task", ""), query.get("type", "stdout")
            origin, offset = query.get("origin", "start"), query.get("offset", "0")
            if not TASK_NAME.match(task):
                return self._fail(400, "task", "is required and must be a task name")
            if kind not in ("stdout", "stderr") or origin not in ("start", "end") or not offset.isdigit():
                return self._fail(400, "type", "type must be stdout|stderr, origin start|end, offset an integer")
            alloc_dir = alloc_dir_of(match.group(1))
            if alloc_dir is None:
                return self._fail(404, "AllocID", f"allocation {match.group(1)} is not on this node")
            try:
                data = read_log(alloc_dir, task, kind, origin, int(offset))
            except FileNotFoundError:
                return self._fail(404, "task", f"task {task!r} has no {kind} log in allocation {match.group(1)}")
            self.send_response(200)
            self._sign(200, data)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None

    host, _, port = bind.rpartition(":")
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    # shutdown() waits up to one poll interval: 0.1 s rather than 0.5 s off the client's stop.
    threading.Thread(target=server.serve_forever, args=(0.1,), name="client-http", daemon=True).start()
    return server
