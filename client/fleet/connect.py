"""The simulated fleet's TCP connections to numeric addresses, made without a resolver.

httpx's default network backend (httpcore over anyio) looks up every new connection's source
address with getaddrinfo in a worker thread, numeric or not. A fleet opens thousands of
connections at once when a placement reaches every node (each node's status batch and watch
reconnect together): the event loop's few executor threads queued the lookups, connects waited
behind them past their 30 s timeout (`sync:ConnectTimeout` by the thousand at 5,000 nodes,
with the servers' listen queue empty) and the handoffs cost about an eighth of the simulator's
CPU. A node's source address and the servers' address are numeric here, so this backend binds
and connects a non-blocking socket in the event loop itself, and reads and writes it with the
loop's socket calls. Anything else (a host name, TLS) goes through httpcore's own backend."""

from __future__ import annotations

import asyncio
import ipaddress
import select
import socket
import ssl
from collections.abc import Iterable

import httpcore

# httpcore's SOCKET_OPTION, spelt out: httpcore does not export it.
SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


def numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class NumericBackend(httpcore.AsyncNetworkBackend):
    """Plain TCP to and from numeric addresses in the event loop; the rest via `fallback`."""

    def __init__(self, fallback: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._fallback = fallback or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if not numeric(host) or (local_address is not None and not numeric(local_address)):
            return await self._fallback.connect_tcp(host, port, timeout, local_address, socket_options)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
            if local_address is not None:
                sock.bind((local_address, 0))
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_connect(sock, (host, port))
        except TimeoutError:
            sock.close()
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout} s") from None
        except OSError as err:
            sock.close()
            raise httpcore.ConnectError(str(err)) from err
        return SocketStream(sock)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self._fallback.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class SocketStream(httpcore.AsyncNetworkStream):
    """A connected non-blocking socket, read and written through the running event loop."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.get_running_loop().sock_recv(self._sock, max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no answer within {timeout} s") from None
        except OSError as err:
            raise httpcore.ReadError(str(err)) from err

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_sendall(self._sock, buffer)
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not send within {timeout} s") from None
        except OSError as err:
            raise httpcore.WriteError(str(err)) from err

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the numeric backend carries plain HTTP only; TLS goes through httpcore's own")

    def get_extra_info(self, info: str) -> object:
        if info == "is_readable":
            return readable(self._sock)
        if info == "socket":
            return self._sock
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        return None


def readable(sock: socket.socket) -> bool:
    """Whether an idle connection has something to read: for HTTP/1.1 that can only be the
    server's close, so httpcore drops the connection instead of sending on it. poll, not
    select: a fleet's descriptors go far past select's 1,024."""
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
