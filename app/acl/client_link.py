"""The link from the servers to a client's endpoint (Nomad's client HTTP API: logs, fs, stats,
restart, signal, exec): which addresses a node may advertise, and the proofs each side checks.

The key of a node's link is HMAC(link secret, node ID): the link secret is held by the servers
only (a file or setting, app/acl/link_secret.py, never a database row), and each client gets its
own node's key in the answers to its registration and heartbeats. So reading the database
(node secrets are stored as hashes) gives nothing to sign with. A request proof is an HMAC over
the method, path, query and a timestamp (refused outside MAX_SKEW_S); the client's answer
carries an HMAC over the request proof, status and body, so the server relays only answers that
came from the node's own client, never the body of some other service at that address. Pure:
callers pass the time in."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

PROOF_HEADER = "X-Corral-Proof"
TIME_HEADER = "X-Corral-Proof-Time"
MAX_SKEW_S = 60
MAX_READ_BYTES = 16 * 1024 * 1024  # the most a client's readat answers at once; bigger files take pages


def http_addr_problem(value: str) -> str | None:
    """None when `value` is empty, `host:port` or `http(s)://host:port`; else what is wrong."""
    if value == "":
        return None
    if any(c.isspace() or ord(c) < 0x20 for c in value):
        return "must not contain spaces or control characters"
    url = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        return f"must be host:port or http(s)://host:port ({err})"
    if parts.scheme not in ("http", "https"):
        return f"scheme must be http or https, got {parts.scheme!r}"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not carry credentials"
    if parts.path not in ("", "/") or parts.query or parts.fragment or url.endswith(("?", "#")):
        return "must be host:port or http(s)://host:port, with no path, query or fragment"
    if not parts.hostname:
        return "must name a host"
    if port is None or port == 0:
        return "must name a port (1-65535)"
    return None


def base_url(value: str) -> str:
    """The checked address as a URL prefix (http:// when no scheme was given)."""
    url = value if "://" in value else f"http://{value}"
    return url.rstrip("/")


LINK_KEY_FIELD = "LinkKey"  # the registration and heartbeat answers' field (a corral extension)
_KEY_CONTEXT = b"corral client link v1\n"


def node_key(link_secret: bytes, node_id: uuid.UUID) -> str:
    """The key of one node's link, hex: what the servers hand that node's client."""
    return hmac.new(link_secret, _KEY_CONTEXT + str(node_id).encode(), hashlib.sha256).hexdigest()


def key_bytes(node_key_hex: str) -> bytes:
    return node_key_hex.encode()


def canonical_query(query: Mapping[str, str]) -> str:
    """The query as both sides sign it: sorted, empty values left out (an HTTP parser may drop
    `task=` or keep it; the proof must not depend on which)."""
    return urlencode(sorted((k, v) for k, v in query.items() if v != ""))


def _canonical(method: str, path: str, query: Mapping[str, str], timestamp: int) -> bytes:
    return "\n".join([method.upper(), path, canonical_query(query), str(timestamp)]).encode()


def request_proof(key: bytes, method: str, path: str, query: Mapping[str, str], timestamp: int) -> str:
    return hmac.new(key, _canonical(method, path, query, timestamp), hashlib.sha256).hexdigest()


def verify_request(
    key: bytes, method: str, path: str, query: Mapping[str, str], timestamp: str, proof: str, now: float
) -> bool:
    if not key or not timestamp.isdigit() or abs(int(timestamp) - now) > MAX_SKEW_S:
        return False
    expected = request_proof(key, method, path, query, int(timestamp))
    return hmac.compare_digest(expected, proof)


def response_proof(key: bytes, request: str, status: int, body: bytes) -> str:
    message = f"response\n{request}\n{status}\n{hashlib.sha256(body).hexdigest()}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def verify_response(key: bytes, request: str, status: int, body: bytes, proof: str) -> bool:
    return hmac.compare_digest(response_proof(key, request, status, body), proof)
