"""The fleet's connections to numeric addresses (client/fleet/connect.py): made in the event
loop from the node's source address with no resolver lookup, kept and reused, and their
failures are httpx's usual errors; host names still go through httpcore's own backend."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import httpx
import pytest

from client.fleet.connect import NumericBackend, readable
from client.fleet.http import async_client

pytestmark = pytest.mark.unit
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class TinyServer:
    """Answers every request on a connection with ANSWER, noting each connection's peer."""

    def __init__(self) -> None:
        self.peers: list[str] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.peers.append(writer.get_extra_info("peername")[0])
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(ANSWER)
            await writer.drain()


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def no_resolver(*args: object, **kwargs: object) -> object:
        raise AssertionError("a numeric connection asked the resolver")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.getaddrinfo = no_resolver  # type: ignore[method-assign,assignment]
        await scenario()

    asyncio.run(main())


def test_a_node_connects_from_its_source_address_and_keeps_the_connection() -> None:
    async def scenario() -> None:
        tiny = TinyServer()
        server = await asyncio.start_server(tiny.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, async_client(f"http://127.0.0.1:{port}", "127.0.0.2", 2) as client:
            first, second = await client.get("/a"), await client.get("/b")
            assert (first.status_code, first.text, second.text) == (200, "ok", "ok")
            assert tiny.peers == ["127.0.0.2"], "the second request did not reuse the kept connection"

    run(scenario)


def test_a_refused_connection_and_a_silent_server_are_httpx_errors() -> None:
    async def scenario() -> None:
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        async with async_client(f"http://127.0.0.1:{port}", None, 1) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get("/")

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(65536)
            await asyncio.sleep(5)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, async_client(f"http://127.0.0.1:{port}", None, 1) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/", timeout=httpx.Timeout(5.0, read=0.2))

    run(scenario)


def test_an_idle_connection_the_server_closed_reads_as_readable() -> None:
    ours, theirs = socket.socketpair()
    try:
        assert not readable(ours)
        theirs.close()
        assert readable(ours), "httpcore would send on a connection the server had closed"
    finally:
        ours.close()


def test_a_host_name_goes_through_httpcores_own_backend() -> None:
    async def scenario() -> None:
        tiny = TinyServer()
        server = await asyncio.start_server(tiny.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            stream = await NumericBackend().connect_tcp("localhost", port, timeout=5)
            await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await stream.read(1024)).endswith(b"ok")
            await stream.aclose()

    asyncio.run(scenario())
