"""The simulated fleet's HTTP clients and the source addresses they connect from.

The servers limit open connections per client address (`http_max_conns_per_client`, 100), and
a real fleet connects from as many addresses as it has nodes. When the server is on loopback
(Linux routes all of 127.0.0.0/8 there) the fleet spreads its nodes over source addresses
127.0.0.2, 127.0.0.3, … with at most `nodes_per_address` (30) nodes on each, each node with
its own clients (NODE_CONNECTIONS + BEAT_CONNECTIONS: at most 90 per address), so the default limit stays on in
tests and benchmarks. Elsewhere every node connects from the machine's own address.

Each realistic node has a client of its own, as a real one has: one shared by the nodes of an
address scanned its whole pool of 60-odd connections on every request, and at 2,500 nodes that
bookkeeping kept the simulator's one core busy, so its heartbeats went out late whenever a job
reached the fleet (the servers were half idle)."""

from __future__ import annotations

import contextlib
import ipaddress
import resource
import ssl
import sys
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from client.fleet.connect import NumericBackend

# A realistic node's connections: its allocation watch and its updates and fetches; and its
# heartbeats' own (client/fleet/beats.py).
NODE_CONNECTIONS = 2
BEAT_CONNECTIONS = 1
# Descriptors per realistic node at most: its watch, its updates' connection, a heartbeat in
# flight and one the server closed that the pool has not looked at yet.
FILES_PER_NODE = 4
FILES_BESIDES_NODES = 1024


def raise_open_files(nodes: int) -> int:
    """Raise this process's open-file limit to what `nodes` realistic nodes need (the hard limit
    too, where the process may: a 10,000-node fleet holds more sockets than the usual 20,000),
    and return the limit in force. Nothing is raised past what the system allows."""
    wanted = nodes * FILES_PER_NODE + FILES_BESIDES_NODES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return soft
    if hard != resource.RLIM_INFINITY and hard < wanted:
        with contextlib.suppress(ValueError, OSError):  # raising the hard limit needs privilege
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def source_addresses(server: str, nodes: int, per_address: int) -> list[str | None]:
    """One source address per group of `per_address` nodes when `server` is on IPv4 loopback
    and this is Linux (127.0.0.2, 127.0.0.3, …); otherwise [None]: the system picks."""
    host = urlsplit(server).hostname or ""
    if host == "localhost":
        host = "127.0.0.1"
    try:
        on_loopback = ipaddress.ip_address(host) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        on_loopback = False
    if not on_loopback or not sys.platform.startswith("linux") or per_address <= 0:
        return [None]
    wanted = max(1, -(-nodes // per_address))
    found: list[str | None] = []
    candidate = int(ipaddress.IPv4Address("127.0.0.2"))
    while len(found) < wanted:
        if candidate & 0xFF not in (0, 255):  # skip network/broadcast-looking addresses
            found.append(str(ipaddress.IPv4Address(candidate)))
        candidate += 1
    return found


def loopback_url(server: str) -> str:
    """`server` with `localhost` spelled 127.0.0.1, so a bound IPv4 source can reach it."""
    parts = urlsplit(server)
    if parts.hostname == "localhost":
        netloc = parts.netloc.replace("localhost", "127.0.0.1", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    return server


def compact_connections(threads: int) -> int:
    """How many connections compact mode's client for one source address may hold: the
    concurrency the caller asked for."""
    return threads * 2 + 2


def async_client(
    base: str, address: str | None, size: int, tls: ssl.SSLContext | None = None, keep: int | None = None
) -> httpx.AsyncClient:
    """A client to `base` from the source `address` (None: the system picks), `size`
    connections of which `keep` (default: all) stay open between requests; `tls`, shared by a
    fleet's many clients (each would otherwise build its own)."""
    kept = size if keep is None else keep
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=kept)
    transport = httpx.AsyncHTTPTransport(local_address=address, limits=limits, verify=tls if tls is not None else True)
    if urlsplit(base).scheme == "http":
        # httpx's transport takes no network backend, so its pool is rebuilt with the same
        # limits over ours (client/fleet/connect.py: no resolver thread per connection).
        transport._pool = httpcore.AsyncConnectionPool(
            max_connections=size,
            max_keepalive_connections=kept,
            keepalive_expiry=limits.keepalive_expiry,
            local_address=address,
            network_backend=NumericBackend(),
        )
    timeout = httpx.Timeout(30.0, pool=60.0)
    return httpx.AsyncClient(base_url=base, transport=ResendOnClosedConnection(transport), timeout=timeout)


class ResendOnClosedConnection(httpx.AsyncBaseTransport):
    """Send a request once more, on a fresh connection, when the one it went out on turned out
    closed by the server (no answer at all), as Go's HTTP client does for a connection the server
    closed while idle and Nomad's client does for a failed RPC. Every request of the fleet is
    safe to repeat: a watch reads, a heartbeat and a status batch say the same thing twice.

    Without it, a busy simulator lost the race against the servers' idle deadline: its loop
    handed a kept connection out late, the servers had closed it meanwhile, and the request
    failed (thousands of `ReadError` per minute at 5,000 nodes during a placement storm)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self._inner.handle_async_request(request)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
