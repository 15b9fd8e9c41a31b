"""A blocking WebSocket over a socket, built on wsproto (sans-IO: it never touches the socket,
so the same code runs on a gevent-patched socket in the API, on a thread in the client agent
and in the CLI). Text messages only, as Nomad's exec protocol sends JSON.

Both ends of a corral exec session use it: `accept_response` + `WebSocket.server` where an HTTP
server already parsed the request (gunicorn, http.server), `connect` where we dial out."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.connection import Connection, ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455's constant for Sec-WebSocket-Accept
MAX_MESSAGE_BYTES = 1 << 20  # an exec frame carries a few KiB; anything near this is abuse
MAX_REFUSAL_BYTES = 1 << 20
READ_BYTES = 65536
NORMAL, POLICY_VIOLATION, TOO_BIG, INTERNAL_ERROR = 1000, 1008, 1009, 1011


class Closed(Exception):
    """The connection is gone (closed by either side, or dropped)."""


def wants_upgrade(headers: Mapping[str, str]) -> bool:
    """An HTTP request asking for a WebSocket (header names lower-case)."""
    connection = {part.strip().lower() for part in headers.get("connection", "").split(",")}
    return (
        headers.get("upgrade", "").lower() == "websocket"
        and "upgrade" in connection
        and bool(headers.get("sec-websocket-key"))
        and headers.get("sec-websocket-version", "") == "13"
    )


def accept_token(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def accept_response(key: str, extra: Mapping[str, str] | None = None) -> bytes:
    """The 101 answer to a WebSocket request whose Sec-WebSocket-Key is `key`."""
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Accept: {accept_token(key)}",
        *(f"{name}: {value}" for name, value in (extra or {}).items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class WebSocket:
    """One open WebSocket. `send` may be called from several threads; `receive` from one."""

    def __init__(self, sock: socket.socket, protocol: WSConnection | Connection) -> None:
        self.sock, self._protocol = sock, protocol
        self._send_lock = threading.Lock()
        self._parts: list[str] = []
        self._size = 0
        self.closed = False
        self.close_code: int | None = None
        self.close_reason = ""

    @classmethod
    def server(cls, sock: socket.socket) -> WebSocket:
        """The server's end, once the 101 answer has been written on `sock`."""
        sock.settimeout(None)
        return cls(sock, Connection(ConnectionType.SERVER))

    def _write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as err:
            self.closed = True
            raise Closed(str(err)) from err

    def send(self, text: str) -> None:
        with self._send_lock:
            if self.closed or self._protocol.state != ConnectionState.OPEN:
                raise Closed("the WebSocket is closed")
            self._write(self._protocol.send(TextMessage(data=text)))

    def close(self, code: int = NORMAL, reason: str = "") -> None:
        """Send a close frame (once); the socket itself is closed by its owner."""
        with self._send_lock:
            if self.closed or self._protocol.state != ConnectionState.OPEN:
                return
            try:
                self._write(self._protocol.send(CloseConnection(code=code, reason=reason[:120])))
            except (Closed, LocalProtocolError):
                self.closed = True

    def receive(self) -> str | None:
        """The next text message; None once the peer closed or the connection dropped."""
        while True:
            found = self._next_message()
            if found is not None or self.closed:
                return found
            try:
                data = self.sock.recv(READ_BYTES)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return None
            self._protocol.receive_data(data)

    def _next_message(self) -> str | None:
        try:
            for event in self._protocol.events():
                if isinstance(event, TextMessage | BytesMessage):
                    text = event.data if isinstance(event.data, str) else event.data.decode("utf-8", "replace")
                    done = self._gather(text, event.message_finished)
                    if done is not None:
                        return done
                elif isinstance(event, Ping):
                    with self._send_lock:
                        self._write(self._protocol.send(event.response()))
                elif isinstance(event, CloseConnection):
                    self._peer_closed(event)
                    return None
        except RemoteProtocolError:
            self.close(POLICY_VIOLATION, "protocol error")
            self.closed = True
        except Closed:
            pass
        return None

    def _gather(self, text: str, finished: bool) -> str | None:
        self._parts.append(text)
        self._size += len(text)
        if self._size > MAX_MESSAGE_BYTES:
            self.close(TOO_BIG, "message too big")
            self.closed = True
            return None
        if not finished:
            return None
        whole, self._parts, self._size = "".join(self._parts), [], 0
        return whole

    def _peer_closed(self, event: CloseConnection) -> None:
        self.close_code, self.close_reason = event.code, event.reason or ""
        with self._send_lock:
            if self._protocol.state == ConnectionState.REMOTE_CLOSING:
                with contextlib.suppress(Closed, LocalProtocolError):
                    self._write(self._protocol.send(event.response()))
        self.closed = True


@dataclass(frozen=True)
class Refused:
    """The server answered the upgrade request with an HTTP status, not a WebSocket."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Accepted:
    ws: WebSocket
    headers: dict[str, str]  # the 101 answer's headers, names lower-case


def _headers(pairs: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in pairs}


def connect(
    url: str, headers: Mapping[str, str], *, timeout_s: float, tls: ssl.SSLContext | bool = True
) -> Accepted | Refused:
    """Open a WebSocket to an http(s):// or ws(s):// URL. The handshake (connect, answer) must
    finish within timeout_s; the open socket then blocks without a timeout. OSError when the
    server cannot be reached or answers something that is not HTTP."""
    parts = urlsplit(url)
    secure = parts.scheme in ("https", "wss")
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if secure else 80)
    sock = socket.create_connection((host, port), timeout=timeout_s)
    try:
        if secure:
            context = tls if isinstance(tls, ssl.SSLContext) else ssl.create_default_context()
            if tls is False:
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=host)
        protocol = WSConnection(ConnectionType.CLIENT)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        sock.sendall(protocol.send(Request(host=parts.netloc, target=target, extra_headers=extra)))
        answer = _handshake(sock, protocol)
    except BaseException:
        sock.close()
        raise
    if isinstance(answer, Refused):
        sock.close()
        return answer
    sock.settimeout(None)
    return Accepted(WebSocket(sock, protocol), answer)


def _handshake(sock: socket.socket, protocol: WSConnection) -> dict[str, str] | Refused:
    refused: RejectConnection | None = None
    body = bytearray()
    while True:
        data = sock.recv(READ_BYTES)
        if not data:
            if refused is not None:
                return Refused(refused.status_code, _headers(refused.headers), bytes(body))
            raise OSError("the server closed the connection during the WebSocket handshake")
        try:
            protocol.receive_data(data)
            for event in protocol.events():
                if isinstance(event, AcceptConnection):
                    return _headers(event.extra_headers)
                if isinstance(event, RejectConnection):
                    refused = event
                    if not event.has_body:
                        return Refused(event.status_code, _headers(event.headers), b"")
                elif isinstance(event, RejectData) and refused is not None:
                    body += event.data[: MAX_REFUSAL_BYTES - len(body)]
                    if event.body_finished:
                        return Refused(refused.status_code, _headers(refused.headers), bytes(body))
        except RemoteProtocolError as err:
            raise OSError(f"not a WebSocket answer: {err}") from err
