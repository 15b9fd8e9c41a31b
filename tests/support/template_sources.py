"""Fakes for the template hook: a Source that answers blocking queries from memory, a small
HTTP server with Nomad's variables and services routes, and a task control that records."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from client.template.values import Service, ServiceSnippet, VarMeta
from client.templating.source import SERVICE, SERVICES, VAR, VARS, Answer, Dependency, SourceError, Value
from client.templating.spec import ChangeScript


class Store:
    """Variables and service registrations with one index that moves on each write; readers
    block on it the way Nomad's blocking queries do."""

    def __init__(self) -> None:
        self.index = 1
        self.vars: dict[str, dict[str, str]] = {}
        self.services: dict[str, list[dict[str, Any]]] = {}
        self.cond = threading.Condition()
        self.queries = 0

    def put_var(self, path: str, items: dict[str, str]) -> int:
        with self.cond:
            self.index += 1
            self.vars[path] = dict(items)
            self.cond.notify_all()
            return self.index

    def put_service(self, name: str, regs: list[dict[str, Any]]) -> None:
        with self.cond:
            self.index += 1
            self.services[name] = regs
            self.cond.notify_all()

    def wait(self, index: int, wait_s: float) -> int:
        deadline = time.monotonic() + wait_s
        with self.cond:
            self.queries += 1
            while index and self.index <= index and (left := deadline - time.monotonic()) > 0:
                self.cond.wait(left)
            return self.index


class FakeSource:
    """The Source protocol over a Store (what the manager sees of the HTTP API)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.fail_next = 0

    def fetch(self, dependency: Dependency, index: int, wait_s: float) -> Answer:
        if self.fail_next:
            self.fail_next -= 1
            raise SourceError("servers unreachable")
        new_index = self.store.wait(index, wait_s)
        with self.store.cond:
            return Answer(_value(self.store, dependency), new_index)


def _value(store: Store, dependency: Dependency) -> Value:
    if dependency.kind == VAR:
        items = store.vars.get(dependency.key)
        return dict(items) if items is not None else None
    if dependency.kind == VARS:
        return [VarMeta("default", p, 1, 1, 0, 0) for p in sorted(store.vars) if p.startswith(dependency.key)]
    if dependency.kind == SERVICE:
        return [
            Service(
                r["ID"], dependency.key, "default", "dc1", r["Address"], r["Port"], tuple(r.get("Tags", ())), "", "", ""
            )
            for r in store.services.get(dependency.key, [])
        ]
    assert dependency.kind == SERVICES
    return [ServiceSnippet(name, ()) for name in sorted(store.services)]


@dataclass
class RecordingControl:
    """The TaskControl a test watches: what the manager asked of the task."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    script_code: int = 0
    acted: threading.Condition = field(default_factory=threading.Condition)

    def _record(self, kind: str, detail: str) -> None:
        with self.acted:
            self.calls.append((kind, detail))
            self.acted.notify_all()

    def restart(self, reason: str) -> None:
        self._record("restart", reason)

    def signal(self, name: str, message: str) -> None:
        self._record("signal", name)

    def run_script(self, script: ChangeScript) -> int:
        self._record("script", script.command)
        return self.script_code

    def event(self, kind: str, message: str) -> None:
        self._record("event", f"{kind}: {message}")

    def fail(self, message: str) -> None:
        self._record("fail", message)

    def wait_for(self, kind: str, count: int = 1, timeout_s: float = 20.0) -> list[str]:
        with self.acted:
            self.acted.wait_for(lambda: len(self.of(kind)) >= count, timeout_s)
            return self.of(kind)

    def of(self, kind: str) -> list[str]:
        return [detail for k, detail in self.calls if k == kind]


class _Handler(BaseHTTPRequestHandler):
    store: Store
    tokens: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.tokens.append(self.headers.get("X-Nomad-Token", ""))
        wait_s = float(query.get("wait", "300s").rstrip("s"))
        index = self.store.wait(int(query.get("index", "0")), wait_s)
        with self.store.cond:
            status, body = self._answer(unquote(url.path), query)
        data = json.dumps(body).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client went away
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Nomad-Index", str(index))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path.startswith("/v1/var/"):
            var_path = path[len("/v1/var/") :]
            items = self.store.vars.get(var_path)
            if items is None:
                return 404, "variable not found"
            return 200, {"Namespace": "default", "Path": var_path, "Items": items, "CreateIndex": 1, "ModifyIndex": 2}
        if path == "/v1/vars":
            prefix = query.get("prefix", "")
            paths = sorted(p for p in self.store.vars if p.startswith(prefix))
            return 200, [{"Namespace": "default", "Path": p, "CreateIndex": 1, "ModifyIndex": 2} for p in paths]
        if path.startswith("/v1/service/"):
            name = path[len("/v1/service/") :]
            return 200, [{**r, "ServiceName": name, "Namespace": "default"} for r in self.store.services.get(name, [])]
        if path == "/v1/services":
            services = [{"ServiceName": name, "Tags": ["t"]} for name in sorted(self.store.services)]
            return 200, [{"Namespace": "default", "Services": services}]
        return 404, "not found"


@contextmanager
def nomad_http(store: Store) -> Iterator[tuple[str, list[str]]]:
    """A loopback server with Nomad's read routes for variables and services; yields its
    address and the tokens it was sent."""
    tokens: list[str] = []
    handler = type("Handler", (_Handler,), {"store": store, "tokens": tokens})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tokens
    finally:
        server.shutdown()
        server.server_close()
        with store.cond:
            store.index += 1  # wake blocked handlers so their threads end
            store.cond.notify_all()
