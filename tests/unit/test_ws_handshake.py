"""Nomad's WebSocket handshake (?ws_handshake=true): the flag, the first frame, and reading it
from a real socket pair."""

from __future__ import annotations

import socket

import pytest
from wsproto import ConnectionType
from wsproto.connection import Connection
from wsproto.events import TextMessage

from app.api.http import ws_handshake as hs
from app.stream import websocket as wsock
from app.values.errors import InvalidInput

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "wanted"),
    [
        (None, False),
        ("", False),
        ("1", True),
        ("true", True),
        ("T", True),
        ("0", False),
        ("false", False),
        ("F", False),
    ],
)
def test_the_flag_is_a_go_boolean(raw: str | None, wanted: bool) -> None:
    assert hs.parse_flag(raw) is wanted
    assert hs.requested(raw) is wanted


def test_a_flag_that_is_no_boolean_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput, match="ws_handshake: ws_handshake value is not a boolean"):
        hs.parse_flag("yes")
    assert hs.requested("yes") is False


def test_the_frame_carries_version_1_and_the_token() -> None:
    assert hs.token_of('{"version": 1, "auth_token": "s3cret", "extra": 1}', "") == "s3cret"
    assert hs.token_of('{"version": 1, "auth_token": "s3cret"}', "s3cret") == "s3cret"
    assert hs.token_of('{"version": 1}', "") == ""  # anonymous, as Nomad reads an empty token


@pytest.mark.parametrize(
    ("message", "header", "problem"),
    [
        (None, "", "closed before the handshake"),
        ("not json", "", "not JSON"),
        ("[1]", "", "JSON object"),
        ('{"version": 2, "auth_token": "x"}', "", "unexpected handshake value: 2"),
        ('{"auth_token": "x"}', "", "unexpected handshake value: 0"),
        ('{"version": "1", "auth_token": "x"}', "", "integer version"),
        ('{"version": 1, "auth_token": "x"}', "y", "handshake auth token mismatched auth header token"),
    ],
)
def test_bad_frames_are_refused_with_the_reason(message: str | None, header: str, problem: str) -> None:
    with pytest.raises(hs.HandshakeError, match=problem):
        hs.token_of(message, header)


def test_the_token_is_read_from_the_first_frame_of_a_socket() -> None:
    server_sock, client_sock = socket.socketpair()
    with server_sock, client_sock:
        # The browser's side after the upgrade: a client connection that writes masked frames.
        browser = Connection(ConnectionType.CLIENT)
        client_sock.sendall(browser.send(TextMessage(data='{"version":1,"auth_token":"abc"}')))
        server = wsock.WebSocket.server(server_sock)
        assert hs.read_token(server, "", 5.0) == "abc"
        assert server_sock.gettimeout() is None  # the session itself has no read timeout


def test_a_silent_peer_times_out() -> None:
    server_sock, client_sock = socket.socketpair()
    with server_sock, client_sock:
        server = wsock.WebSocket.server(server_sock)
        with pytest.raises(hs.HandshakeError, match="closed before the handshake"):
            hs.read_token(server, "", 0.2)
