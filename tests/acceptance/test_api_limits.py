"""The API under hostile and heavy load: a real `corral server` (gevent workers) with its limits
(connections per address, header deadline, body size), and a flood of blocking queries and
slow-header sockets that must not starve health checks or a real client's heartbeats."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.cluster import Cluster
from tests.support.processes import Corral, CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance


def _server(corral: CorralFactory, database_url: str, **settings: str) -> tuple[Corral, str, int]:
    port = free_port()
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_HTTP_WORKERS": "1"}
    env |= {f"CORRAL_{k.upper()}": v for k, v in settings.items()}
    server = corral(["server"], env=env)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, server)
    return server, base, port


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def _answered_once(port: int) -> socket.socket:
    """A connection that has had one keep-alive request answered and stays open."""
    sock = _connect(port)
    sock.sendall(b"GET /v1/agent/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {received!r}"
        received += chunk
    assert received.startswith(b"HTTP/1.1 200 "), received
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _established(server: Corral, port: int) -> int:
    """Open TCP connections to the API port held by the server's worker processes."""
    count = 0
    for proc in server.descendants():
        with contextlib.suppress(psutil.Error):
            count += sum(1 for c in proc.net_connections("tcp") if c.laddr and c.laddr.port == port and c.raddr)
    return count


def test_a_body_over_the_limit_gets_413_naming_the_limit(corral: CorralFactory, database_url: str) -> None:
    _, base, _ = _server(corral, database_url, http_max_body_bytes="2048")
    big = {"Job": {"ID": "big", "Meta": {"filler": "x" * 4096}}}
    answer = httpx.put(f"{base}/v1/jobs", json=big, timeout=30)
    assert answer.status_code == 413
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert "Request Entity Too Large" in answer.json()["title"]
    assert httpx.get(f"{base}/v1/jobs", timeout=30).json() == []  # nothing written


def test_connections_over_the_per_address_limit_get_429_and_retry_after(
    corral: CorralFactory, database_url: str
) -> None:
    server, base, port = _server(corral, database_url, http_max_conns_per_client="4", http_header_timeout_s="60")
    # Each held connection is answered once, so the worker has surely accepted and counted it
    # (counting sockets by process raced the accept loop at load); keep-alive holds it open.
    held = [_answered_once(port) for _ in range(4)]
    try:
        refused = _connect(port)
        reply = _read_all(refused).decode()
        refused.close()
        assert reply.startswith("HTTP/1.1 429 ")
        assert "Retry-After: 1" in reply
        assert "X-Content-Type-Options: nosniff" in reply  # as every answer of the app
        assert "http_max_conns_per_client" in reply
    finally:
        for sock in held:
            sock.close()
    # The slots come back once the connections close.
    assert wait_for(lambda: _established(server, port) == 0, 30)
    assert httpx.get(f"{base}/v1/agent/health", timeout=10).status_code == 200


def test_a_client_trickling_headers_is_cut_off_at_the_header_deadline(corral: CorralFactory, database_url: str) -> None:
    _, _, port = _server(corral, database_url, http_header_timeout_s="1")
    sock = _connect(port)
    sock.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    began = time.monotonic()
    closed = False
    # One header line every 0.3 s would keep a per-read timeout happy forever; the deadline
    # covers the whole header block.
    while time.monotonic() - began < 30:
        try:
            sock.sendall(b"X-Slow: 1\r\n")
        except OSError:
            closed = True
            break
        sock.settimeout(0.3)
        try:
            if sock.recv(1024) == b"":
                closed = True
                break
        except TimeoutError:
            pass
    sock.close()
    assert closed


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    # No per-address limit: the flood below comes from this one address, as a fleet behind a NAT would.
    running = Cluster(corral, database_url, workdir, {"CORRAL_HTTP_MAX_CONNS_PER_CLIENT": "0"})
    yield running
    running.close()


def test_a_flood_of_blocking_queries_and_slow_sockets_starves_neither_health_nor_heartbeats(
    cluster: Cluster,
) -> None:
    cluster.client("steady")
    index = int(cluster.http.get("/v1/jobs").headers["X-Nomad-Index"])
    stop = threading.Event()
    port = int(cluster.base.rsplit(":", 1)[1])
    waiting = f"GET /v1/jobs?index={index + 10**9}&wait=300s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    flood = []
    for _ in range(500):
        sock = _connect(port)
        sock.sendall(waiting)
        flood.append(sock)
    slow = []
    for _ in range(40):
        sock = _connect(port)
        sock.sendall(b"GET /v1/jobs HTTP/1.1\r\n")
        slow.append(sock)

    def trickle() -> None:
        while not stop.wait(1.0):
            for sock in slow:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X-Slow: 1\r\n")

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        # Heartbeat TTL 2 s + grace 2 s (tests.acceptance.cluster.FAST): a starved heartbeat
        # would mark the node down well within this window.
        health_failures: list[int | str] = []
        began = time.monotonic()
        while time.monotonic() - began < 15:
            try:
                answer = httpx.get(f"{cluster.base}/v1/agent/health", timeout=5)
                if answer.status_code != 200:
                    health_failures.append(answer.status_code)
            except httpx.HTTPError as err:
                health_failures.append(type(err).__name__)
            assert cluster.node_status("steady") == "ready"
            time.sleep(0.5)
        assert health_failures == []
        assert _established(cluster.server, port) >= 500
    finally:
        stop.set()
        for sock in flood + slow:
            sock.close()
    # Every socket of the flood is released once its client goes (the steady client keeps its
    # own couple of connections).
    assert wait_for(lambda: _established(cluster.server, port) < 20, 60), _established(cluster.server, port)
    assert cluster.node_status("steady") == "ready"
