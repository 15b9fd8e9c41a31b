"""The servers' link to a client's endpoint: advertised addresses are host:port only, and
requests and answers carry HMAC proofs keyed by the node's link key (derived from the servers'
link secret, not from anything stored); the client's endpoint refuses requests without a valid
proof and signs its answers."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
import pytest

from app.acl import client_link as link
from app.values.ids import secret_hash
from client.endpoint.logs_http import serve

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("value", ["", "10.0.0.1:4647", "http://host.example:80", "https://[::1]:8443", "node-1:1"])
def test_plain_addresses_pass(value: str) -> None:
    assert link.http_addr_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("http://127.0.0.1:4646/v1/agent/self?x=", "no path, query or fragment"),
        ("127.0.0.1:4646/x", "no path"),
        ("127.0.0.1:4646?x=1", "no path"),
        ("127.0.0.1:4646#f", "no path"),
        ("http://user:pw@10.0.0.1:80", "credentials"),
        ("ftp://10.0.0.1:21", "scheme"),
        ("10.0.0.1", "port"),
        ("10.0.0.1:0", "port"),
        ("10.0.0.1:99999", "host:port"),
        ("10.0.0.1 :80", "spaces"),
        ("10.0.0.1:80\r\nX: y", "control"),
    ],
)
def test_addresses_with_more_than_host_and_port_are_refused(value: str, problem: str) -> None:
    found = link.http_addr_problem(value)
    assert found is not None and problem in found


NODE_KEY = link.node_key(b"x" * 32, uuid.UUID("0b9e0d2a-5f7c-4c55-9a55-4b9c5c0e6f11"))


def test_the_link_key_comes_from_the_link_secret_and_the_node_not_from_the_stored_hash() -> None:
    node = uuid.uuid4()
    key = link.node_key(b"s" * 32, node)
    assert key == link.node_key(b"s" * 32, node)
    assert key != link.node_key(b"t" * 32, node) and key != link.node_key(b"s" * 32, uuid.uuid4())
    assert key != secret_hash("s3cret") and len(key) == 64


def test_empty_query_values_do_not_change_a_proof() -> None:
    """An HTTP parser may drop `task=` (parse_qs does) or keep it: both sides sign the same."""
    key = link.key_bytes(NODE_KEY)
    proof = link.request_proof(key, "PUT", "/p", {"task": "", "all_tasks": "true"}, 1000)
    assert link.verify_request(key, "PUT", "/p", {"all_tasks": "true"}, "1000", proof, now=1000)


def test_request_proof_binds_method_path_query_and_time() -> None:
    key = link.key_bytes(NODE_KEY)
    query = {"task": "t", "type": "stdout"}
    proof = link.request_proof(key, "GET", "/v1/client/fs/logs/x", query, 1000)
    assert link.verify_request(key, "GET", "/v1/client/fs/logs/x", query, "1000", proof, now=1010)
    assert not link.verify_request(key, "GET", "/v1/client/fs/logs/y", query, "1000", proof, now=1010)
    assert not link.verify_request(key, "GET", "/v1/client/fs/logs/x", {**query, "task": "u"}, "1000", proof, 1010)
    assert not link.verify_request(key, "GET", "/v1/client/fs/logs/x", query, "1000", proof, now=1000 + 61)
    assert not link.verify_request(b"other", "GET", "/v1/client/fs/logs/x", query, "1000", proof, now=1010)
    assert not link.verify_request(key, "GET", "/v1/client/fs/logs/x", query, "", proof, now=1010)


def test_log_endpoint_refuses_requests_without_proof_and_signs_answers(tmp_path: Path) -> None:
    alloc_id = "0b9e0d2a-5f7c-4c55-9a55-4b9c5c0e6f11"
    logs = tmp_path / alloc_id / "alloc" / "logs"
    logs.mkdir(parents=True)
    (logs / "t.stdout.0").write_bytes(b"hello\n")
    server = serve("127.0.0.1:0", lambda a: tmp_path / a if a == alloc_id else None, lambda: NODE_KEY)
    host, port = server.server_address[:2]
    base = f"http://{host!s}:{port}"
    path = f"/v1/client/fs/readat/{alloc_id}"
    query = {"path": "alloc/logs/t.stdout.0", "offset": "0", "limit": "0"}
    try:
        assert httpx.get(base + path, params=query).status_code == 403
        stamp = int(time.time())
        forged = link.request_proof(b"guess", "GET", path, query, stamp)
        headers = {link.PROOF_HEADER: forged, link.TIME_HEADER: str(stamp)}
        assert httpx.get(base + path, params=query, headers=headers).status_code == 403
        old_style = link.request_proof(secret_hash("node-secret").encode(), "GET", path, query, stamp)
        headers = {link.PROOF_HEADER: old_style, link.TIME_HEADER: str(stamp)}
        assert httpx.get(base + path, params=query, headers=headers).status_code == 403
        key = link.key_bytes(NODE_KEY)
        proof = link.request_proof(key, "GET", path, query, stamp)
        reply = httpx.get(base + path, params=query, headers={link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)})
        assert reply.status_code == 200 and reply.content == b"hello\n"
        assert link.verify_response(key, proof, 200, reply.content, reply.headers[link.PROOF_HEADER])
        assert not link.verify_response(key, proof, 200, b"tampered", reply.headers[link.PROOF_HEADER])
    finally:
        server.shutdown()
        server.server_close()


def test_an_act_replayed_with_its_valid_proof_is_refused(tmp_path: Path) -> None:
    server = serve("127.0.0.1:0", lambda a: None, lambda: NODE_KEY)
    host, port = server.server_address[:2]
    path = "/v1/client/allocation/0b9e0d2a-5f7c-4c55-9a55-4b9c5c0e6f11/signal"
    query = {"task": "t", "signal": "SIGUSR1", "nonce": "n1"}
    key = link.key_bytes(NODE_KEY)
    stamp = int(time.time())
    headers = {link.PROOF_HEADER: link.request_proof(key, "PUT", path, query, stamp), link.TIME_HEADER: str(stamp)}
    try:
        first = httpx.put(f"http://{host!s}:{port}{path}", params=query, headers=headers)
        assert first.status_code == 404  # served (no such allocation here)
        again = httpx.put(f"http://{host!s}:{port}{path}", params=query, headers=headers)
        assert again.status_code == 403 and "already served" in again.text
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_without_a_link_key_serves_nothing(tmp_path: Path) -> None:
    """A client that has not registered yet has no key: even a proof keyed by an empty key fails."""
    server = serve("127.0.0.1:0", lambda a: tmp_path, lambda: "")
    host, port = server.server_address[:2]
    path = "/v1/client/stats"
    stamp = int(time.time())
    headers = {link.PROOF_HEADER: link.request_proof(b"", "GET", path, {}, stamp), link.TIME_HEADER: str(stamp)}
    try:
        assert httpx.get(f"http://{host!s}:{port}{path}", headers=headers).status_code == 403
    finally:
        server.shutdown()
        server.server_close()


def test_a_blank_task_reaches_the_endpoint_signed_as_the_server_signed_it(tmp_path: Path) -> None:
    """restart-all: the server's `task=` (blank) must not break the proof at the client."""
    server = serve("127.0.0.1:0", lambda a: None, lambda: NODE_KEY)
    host, port = server.server_address[:2]
    path = "/v1/client/allocation/0b9e0d2a-5f7c-4c55-9a55-4b9c5c0e6f11/restart"
    query = {"task": "", "all_tasks": "true", "nonce": "n2"}
    stamp = int(time.time())
    proof = link.request_proof(link.key_bytes(NODE_KEY), "PUT", path, query, stamp)
    try:
        sent = httpx.put(
            f"http://{host!s}:{port}{path}?task=&all_tasks=true&nonce=n2",
            headers={link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)},
        )
        assert sent.status_code == 404  # served: no such allocation on this endpoint
    finally:
        server.shutdown()
        server.server_close()
