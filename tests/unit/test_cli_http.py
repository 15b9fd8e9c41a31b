"""The CLI's stdlib HTTP client: query strings as the API expects them, errors that name the
request, answers read whole or streamed (a tiny threaded server stands in for corral)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.cli.support import http

pytestmark = pytest.mark.unit


def test_query_strings_spell_booleans_none_and_lists_as_the_api_reads_them() -> None:
    assert http.query_string(None) == ""
    assert http.query_string({"a": True, "b": False, "c": None, "d": 3}) == "?a=true&b=false&c=&d=3"
    assert http.query_string({"topic": ["Job:web", "Node:*"]}) == "?topic=Job%3Aweb&topic=Node%3A%2A"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/missing"):
            body = json.dumps({"title": "Not Found", "detail": "job 'x' not found"}).encode()
            self.send_response(404)
        elif self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one ", b"two"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        else:
            body = json.dumps({"path": self.path, "token": self.headers.get("X-Nomad-Token")}).encode()
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        received = json.loads(self.rfile.read(length)) if length else None
        body = json.dumps({"received": received, "type": self.headers.get("Content-Type")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    address = f"http://127.0.0.1:{httpd.server_address[1]}"
    monkeypatch.setenv("CORRAL_ADDR", address)
    monkeypatch.setenv("CORRAL_TOKEN", "s3cret")
    yield address
    httpd.shutdown()
    httpd.server_close()


def test_a_get_sends_the_token_and_the_query(server: str) -> None:
    assert http.get("/v1/jobs", {"prefix": "web"}) == {"path": "/v1/jobs?prefix=web", "token": "s3cret"}


def test_a_put_sends_its_body_as_json(server: str) -> None:
    assert http.put("/v1/jobs", {"Job": {"ID": "web"}}) == {
        "received": {"Job": {"ID": "web"}},
        "type": "application/json",
    }


def test_an_error_answer_names_the_request_and_the_problem(server: str) -> None:
    with pytest.raises(http.ApiError) as raised:
        http.get("/missing/job")
    assert raised.value.status == 404
    assert raised.value.message == "GET /missing/job: 404 Not Found: job 'x' not found"


def test_a_streamed_answer_arrives_chunk_by_chunk(server: str) -> None:
    assert b"".join(http.stream_text("/stream")) == b"one two"


def test_an_unreachable_server_is_status_0_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_ADDR", "http://127.0.0.1:9")
    with pytest.raises(http.ApiError) as raised:
        http.get("/v1/jobs")
    assert raised.value.status == 0 and "cannot reach corral" in raised.value.message


def test_an_address_without_a_scheme_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_ADDR", "127.0.0.1:4646")
    with pytest.raises(http.ApiError) as raised:
        http.get("/v1/jobs")
    assert "CORRAL_ADDR" in raised.value.message
