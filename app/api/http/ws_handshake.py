"""Nomad's WebSocket handshake (`?ws_handshake=true`): a browser cannot set X-Nomad-Token on a
WebSocket, so it opens the socket unauthenticated and sends its token in the first text frame,
`{"version": 1, "auth_token": "<secret>"}` (Nomad's command/agent/websockets.go). The server
upgrades first, reads that frame, then checks the route's ACL requirement with that token; any
refusal is a close frame (1008, policy violation) carrying the reason.

Pure parsing here; app/api/routes/client/client_exec.py drives it, app/api/access/enforcement.py defers its check."""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.stream import websocket as wsock
from app.values.errors import InvalidInput

SUPPORTED_VERSION = 1
# Go's strconv.ParseBool, which Nomad uses for the flag.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class HandshakeError(Exception):
    """The first frame is missing, not the handshake, or disagrees with the header token."""


@dataclass(frozen=True)
class Handshake:
    version: int
    auth_token: str


def parse_flag(raw: str | None) -> bool:
    """Whether `?ws_handshake=` asks for the handshake; absent or empty: no."""
    if raw is None or raw == "":
        return False
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise InvalidInput.of("ws_handshake", f"ws_handshake value is not a boolean: {raw!r}")


def requested(raw: str | None) -> bool:
    """parse_flag, with a value that is not a boolean counting as no handshake (the route then
    refuses it with a 400 naming ws_handshake)."""
    try:
        return parse_flag(raw)
    except InvalidInput:
        return False


def parse_message(text: str) -> Handshake:
    """The handshake frame. Nomad decodes it as JSON into {version, auth_token}: unknown keys
    are ignored, a wrong type or a version other than 1 is refused."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise HandshakeError("the handshake is not JSON") from None
    if not isinstance(body, dict):
        raise HandshakeError("the handshake must be a JSON object")
    version, token = body.get("version", 0), body.get("auth_token", "")
    if not isinstance(version, int) or isinstance(version, bool) or not isinstance(token, str):
        raise HandshakeError("the handshake wants an integer version and a string auth_token")
    if version != SUPPORTED_VERSION:
        raise HandshakeError(f"unexpected handshake value: {version}")
    return Handshake(version, token)


def token_of(message: str | None, header_token: str) -> str:
    """The token the session runs with: the handshake's, which must agree with a header token
    sent as well (a non-browser client may send both)."""
    if message is None:
        raise HandshakeError("the connection closed before the handshake")
    found = parse_message(message)
    if header_token and header_token != found.auth_token:
        raise HandshakeError("handshake auth token mismatched auth header token")
    return found.auth_token


def read_token(ws: wsock.WebSocket, header_token: str, timeout_s: float) -> str:
    """Read the first frame of `ws` (within `timeout_s`) and answer the token it carries."""
    ws.sock.settimeout(timeout_s)
    try:
        message = ws.receive()
    finally:
        ws.sock.settimeout(None)
    return token_of(message, header_token)
