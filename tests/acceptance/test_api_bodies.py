"""Request bodies a real `corral server` (gunicorn, gevent workers) must refuse with a 4xx, sent
over raw sockets: JSON nested thousands deep (no token, ACLs on and off), a job with a number
where a list belongs, malformed and truncated chunked encoding, and a body trickled a few bytes
at a time, which the whole-body deadline (http_body_deadline_s) cuts off."""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any

import httpx
import pytest

from tests.support.api import minimal_job
from tests.support.processes import CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance
DEEP = 5_000


def _server(corral: CorralFactory, database_url: str, **settings: str) -> tuple[str, int]:
    port = free_port()
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_HTTP_WORKERS": "1"}
    env |= {f"CORRAL_{k.upper()}": v for k, v in settings.items()}
    server = corral(["server"], env=env)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, server)
    return base, port


def _exchange(port: int, head: bytes, body: bytes = b"", *, shut: bool = False) -> tuple[int, Any, bytes]:
    """One request on a fresh connection: the status, the JSON answer (or None), and whatever
    else the server sent before it closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        if shut:
            sock.shutdown(socket.SHUT_WR)  # the body ends here, short of what it promised
        return _answer(sock)


def _answer(sock: socket.socket) -> tuple[int, Any, bytes]:
    """Read one answer (its headers, then Content-Length bytes), then whatever else arrives
    before the connection closes or goes quiet."""
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
            data += chunk
        while len(data) < _length(data) and (chunk := sock.recv(65536)):
            data += chunk
        if b"connection: close" in data.lower():
            while chunk := sock.recv(65536):
                data += chunk
    return _parsed(data)


def _length(data: bytes) -> int:
    header, _, _ = data.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    found = (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    return len(header) + 4 + next(found, 0)


def _parsed(data: bytes) -> tuple[int, Any, bytes]:
    """The status, the JSON answer (or None), and any bytes after the answer."""
    header, _, rest = data.partition(b"\r\n\r\n")
    status = int(header.split(b"\r\n")[0].split()[1])
    body, extra = rest[: _length(data) - len(header) - 4], rest[_length(data) - len(header) - 4 :]
    answer = json.loads(body) if body and b"json" in header.lower() else None
    return status, answer, extra


def _put(path: str, body: bytes, token: str = "") -> bytes:
    auth = f"X-Nomad-Token: {token}\r\n" if token else ""
    return f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _chunked(path: str, token: str) -> bytes:
    auth = f"X-Nomad-Token: {token}\r\n" if token else ""
    return f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Transfer-Encoding: chunked\r\n\r\n".encode()


@pytest.mark.parametrize("acl", [False, True], ids=["acl-off", "acl-on"])
def test_deep_json_wrong_types_and_broken_chunks_get_a_4xx(corral: CorralFactory, database_url: str, acl: bool) -> None:
    base, port = _server(corral, database_url, acl_enabled=str(acl).lower())
    token = httpx.post(f"{base}/v1/acl/bootstrap", timeout=30).json()["SecretID"] if acl else ""
    deep = b'{"Job": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    for path in ("/v1/jobs", "/v1/validate/job", "/v1/job/web/plan", "/v1/node/register"):
        status, answer, _ = _exchange(port, _put(path, deep))
        assert status == (403 if acl else 400), (path, status, answer)
        status, answer, _ = _exchange(port, _put(path, deep, token))
        assert status == 400, (path, status, answer)
        assert answer["errors"][0]["field"] == "body", answer

    job = {"Job": {**minimal_job("web"), "TaskGroups": 5}}
    status, answer, _ = _exchange(port, _put("/v1/validate/job", json.dumps(job).encode(), token))
    assert status == 200, answer
    assert answer["ValidationErrors"] == ["Job.TaskGroups: must be a list, got integer"]

    # A chunk size that is not hex, a chunk longer than its size, a body cut off mid-chunk:
    # one 400 naming the problem each, then the connection closes (where a next request would
    # start is unknown); nothing else is written on it.
    for body, shut in ((b"zz\r\n{}\r\n0\r\n\r\n", False), (b"2\r\n{}}}\r\n0\r\n\r\n", False), (b"9\r\n{}", True)):
        status, answer, extra = _exchange(port, _chunked("/v1/validate/job", token), body, shut=shut)
        assert status == 400, (body, status, answer)
        assert answer["errors"][0]["field"] == "body", answer
        assert extra == b"", extra
    assert httpx.get(f"{base}/v1/jobs", headers={"X-Nomad-Token": token}, timeout=30).json() == []


def test_a_body_trickled_past_the_deadline_gets_408_and_the_connection_closes(
    corral: CorralFactory, database_url: str
) -> None:
    # Each pause is far shorter than the per-read timeout: only the whole-body deadline ends it.
    _, port = _server(corral, database_url, http_body_deadline_s="2", http_body_timeout_s="60")
    for path in ("/v1/jobs", "/v1/agent/health"):  # a route that reads the body, and one that does not
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{{".encode())
            answered = _trickle(sock)
        assert answered is not None, f"{path}: the connection stayed open while the body trickled"
        status, answer, extra = answered
        if path == "/v1/jobs":
            assert status == 408, answer
            assert "http_body_deadline_s" in answer["detail"], answer
        assert extra == b"", extra


def _trickle(sock: socket.socket) -> tuple[int, Any, bytes] | None:
    """Send a byte every 0.3 s, never the whole body, until the server closes the connection;
    what it answered, or None if it still held the connection open after 98 bytes."""
    sock.settimeout(0.3)
    received = b""
    for _ in range(98):
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            with contextlib.suppress(OSError):
                sock.sendall(b" ")
            continue
        except OSError:
            chunk = b""  # reset: closed as well
        if not chunk:
            return _parsed(received) if received else None
        received += chunk
    return None
