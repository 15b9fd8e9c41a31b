"""The simulated fleet waits out a busy server at registration instead of exiting, and spreads
its nodes over loopback source addresses."""

from __future__ import annotations

import asyncio
import gc
import random
import subprocess
import sys
import threading

import httpx
import pytest

from client.fleet.base import NANOS, FleetConfig
from client.fleet.fleet import Fleet
from client.fleet.http import BEAT_CONNECTIONS, NODE_CONNECTIONS, ResendOnClosedConnection, source_addresses
from client.fleet.retry import Refused, backoff_delay

pytestmark = pytest.mark.unit


def _fleet(handler: httpx.MockTransport) -> Fleet:
    fleet = Fleet(FleetConfig(server="http://corral.test", nodes=2, threads=2), threading.Event())
    fleet.clients = [httpx.AsyncClient(base_url="http://corral.test", transport=handler)]
    return fleet


def test_registration_retries_busy_answers_and_dropped_connections() -> None:
    seen: dict[str, int] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        node = request.read().decode()
        seen[node] = seen.get(node, 0) + 1
        if seen[node] == 1:
            return httpx.Response(503, headers={"Retry-After": "1"})
        if seen[node] == 2:
            raise httpx.ConnectError("connection refused")
        if seen[node] == 3:
            return httpx.Response(429, headers={"Retry-After": "1"})
        return httpx.Response(200, json={"HeartbeatTTL": 7 * NANOS})

    fleet = _fleet(httpx.MockTransport(answer))
    asyncio.run(fleet.register_all())
    assert sorted(seen.values()) == [4, 4]
    assert all(node.ttl_s == 7 and node.registered for node in fleet.nodes.values())
    assert fleet.stats.registered == 2


def test_a_refused_node_ends_registration_with_the_error() -> None:
    fleet = _fleet(httpx.MockTransport(lambda request: httpx.Response(400, json={"detail": "Node.Name: bad"})))
    with pytest.raises(Refused, match=r"Node\.Name: bad"):
        asyncio.run(fleet.register_all())


def test_backoff_grows_to_its_cap_with_jitter() -> None:
    rng = random.Random(1)
    delays = [backoff_delay(attempt, rng, 4.0) for attempt in range(10)]
    assert all(0 < d <= 4.0 for d in delays)
    assert delays[0] <= 0.5
    assert delays[-1] >= 2.0  # at the cap, jittered down to half of it at most
    assert len({round(d, 6) for d in delays[5:]}) > 1  # jittered, not all equal


def test_loopback_fleets_spread_over_source_addresses() -> None:
    addresses = source_addresses("http://127.0.0.1:4646", 5000, 40)
    assert len(addresses) == 125 == len(set(addresses))
    assert addresses[0] == "127.0.0.2"
    assert all(a is not None and a.startswith("127.") and not a.endswith((".0", ".255")) for a in addresses)
    assert len(source_addresses("http://localhost:4646", 10, 40)) == 1
    assert source_addresses("http://10.0.0.5:4646", 5000, 40) == [None]
    assert source_addresses("http://127.0.0.1:4646", 5000, 0) == [None]


def test_nodes_are_spread_evenly_at_most_per_address() -> None:
    fleet = Fleet(FleetConfig(server="http://127.0.0.1:4646", nodes=1000, nodes_per_address=40), threading.Event())
    assert FleetConfig(server="x", nodes=1).nodes_per_address * NODE_CONNECTIONS <= 100  # the servers' default limit
    per_slot: dict[int, int] = {}
    for node in fleet.nodes.values():
        per_slot[node.slot] = per_slot.get(node.slot, 0) + 1
    assert len(per_slot) == 25
    assert max(per_slot.values()) <= 40


def test_a_nodes_watch_survives_a_failed_allocation_fetch_and_starts_it() -> None:
    """Issue 23: an HTTP error while fetching a placed allocation must not end the watch; the
    allocation is fetched again and started, and the poll carries the node's secret."""
    fleet = Fleet(FleetConfig(server="http://corral.test", nodes=1), threading.Event())
    node = next(iter(fleet.nodes.values()))
    alloc_id = "8f7e2a3c-0000-4000-8000-000000000001"
    stub = {
        "ID": alloc_id,
        "NodeID": str(node.id),
        "Namespace": "default",
        "JobID": "web",
        "JobVersion": 0,
        "TaskGroup": "g",
        "DesiredStatus": "run",
        "ClientStatus": "pending",
    }
    fetches: list[int] = []
    polls: list[httpx.Request] = []

    async def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/v1/node/{node.id}/allocations":
            polls.append(request)
            # A blocking query that has nothing new waits; answering at once would leave the
            # watch no await that yields (MockTransport never does), and the test would spin.
            await asyncio.sleep(0.05)
            return httpx.Response(200, json=[stub], headers={"X-Nomad-Index": str(10 + len(polls))})
        fetches.append(1)
        if len(fetches) == 1:
            return httpx.Response(500, json={"detail": "boom"})
        if len(fetches) == 2:
            raise httpx.ReadError("connection dropped")
        job = {"TaskGroups": [{"Name": "g", "Tasks": [{"Config": {}}]}]}
        return httpx.Response(200, json={**stub, "Job": job})

    fleet.clients = [httpx.AsyncClient(base_url="http://corral.test", transport=httpx.MockTransport(answer))]

    async def scenario() -> None:
        watch = asyncio.ensure_future(fleet._watch_node(node))
        for _ in range(200):
            if alloc_id in fleet.known:
                break
            await asyncio.sleep(0.05)
        watch.cancel()

    asyncio.run(scenario())
    assert fleet.known[alloc_id] == node.id
    assert fleet.dirty[node.id][alloc_id]["ClientStatus"] == "running"
    assert len(fetches) == 3
    assert polls[0].headers["X-Nomad-Token"] == node.secret
    assert polls[0].url.params["index"] == "0"
    assert fleet.stats.errors["watch:HTTP 500"] == 1 and fleet.stats.errors["watch:ReadError"] == 1


def _pool_size(client: httpx.AsyncClient) -> int:
    return int(client._transport._inner._pool._max_connections)  # type: ignore[attr-defined]


def test_a_realistic_node_has_a_client_of_its_own_and_compact_nodes_share_one_per_address() -> None:
    """As a real client holds its own connections: a pool shared by an address's 30 nodes was
    scanned whole on every request, which kept the simulator's core busy at 2,500 nodes."""
    config = FleetConfig(server="http://127.0.0.1:4646", nodes=90, nodes_per_address=30)
    fleet = Fleet(config, threading.Event())
    fleet._open_clients()
    assert fleet.lane is not None
    fleet.lane.stop()
    assert len(fleet.clients) == 90 and len({node.client for node in fleet.nodes.values()}) == 90
    assert {_pool_size(c) for c in fleet.clients} == {NODE_CONNECTIONS}
    by_address: dict[int, set[int]] = {}
    for node in fleet.nodes.values():
        by_address.setdefault(node.slot, set()).add(node.client)
    assert sorted(len(clients) for clients in by_address.values()) == [30, 30, 30]
    compact = Fleet(FleetConfig(server="http://127.0.0.1:4646", nodes=90, mode="compact"), threading.Event())
    compact._open_clients()
    assert len(compact.clients) == 3
    assert all(compact._http(node) is compact.clients[node.slot] for node in compact.nodes.values())


def test_a_fleet_raises_its_open_file_limit_to_what_its_nodes_need() -> None:
    """10,000 realistic nodes hold more sockets than the usual 20,000-descriptor limit; the
    fleet raises its own limit (in a child process here, to leave the tests' alone)."""
    script = (
        "import resource\n"
        "from client.fleet.http import raise_open_files, FILES_PER_NODE, FILES_BESIDES_NODES\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "got = raise_open_files(100)\n"
        "assert got == 100 * FILES_PER_NODE + FILES_BESIDES_NODES, got\n"
        "assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == got\n"
        "assert raise_open_files(10) == got  # never lowered\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_node_s_heartbeat_client_keeps_no_connection_between_beats() -> None:
    fleet = Fleet(FleetConfig(server="http://127.0.0.1:4646", nodes=2), threading.Event())
    fleet._open_clients()
    assert fleet.lane is not None
    try:
        beat = fleet._beat_client(next(iter(fleet.nodes)), httpx.create_ssl_context())
        pool = beat._transport._inner._pool  # type: ignore[attr-defined]
        assert (pool._max_connections, pool._max_keepalive_connections) == (BEAT_CONNECTIONS, 0)
    finally:
        fleet.lane.stop()


class _ClosedOnce(httpx.AsyncBaseTransport):
    """The first request finds its connection closed by the server; later ones are answered."""

    def __init__(self, error: type[httpx.TransportError]) -> None:
        self.error, self.sent = error, 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.sent == 1:
            raise self.error("Server disconnected without sending a response.")
        return httpx.Response(200, json={"body": (await request.aread()).decode()})


@pytest.mark.parametrize("error", [httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError])
def test_a_request_on_a_connection_the_server_closed_goes_out_once_more(error: type[httpx.TransportError]) -> None:
    inner = _ClosedOnce(error)
    client = httpx.AsyncClient(base_url="http://corral.test", transport=ResendOnClosedConnection(inner))
    reply = asyncio.run(client.put("/v1/node/x/heartbeat", json={"Status": "ready"}))
    assert reply.status_code == 200 and reply.json() == {"body": '{"Status":"ready"}'}
    assert inner.sent == 2


def test_a_second_closed_connection_is_the_caller_s_failure() -> None:
    class AlwaysClosed(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            raise httpx.ReadError("connection reset")

    client = httpx.AsyncClient(base_url="http://corral.test", transport=ResendOnClosedConnection(AlwaysClosed()))
    with pytest.raises(httpx.ReadError):
        asyncio.run(client.get("/v1/node/x/allocations"))


def test_the_heap_is_frozen_once_every_node_has_registered() -> None:
    registered: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        registered.append(len(registered))
        return httpx.Response(200, json={"HeartbeatTTL": 7 * NANOS})

    fleet = _fleet(httpx.MockTransport(answer))
    node = next(iter(fleet.nodes.values()))
    try:
        asyncio.run(fleet.register(node))
        assert not fleet.stats.gc.settled  # one of two nodes
        asyncio.run(fleet.register_all())
        assert fleet.stats.gc.settled and gc.get_freeze_count() > 0
        assert fleet.stats.snapshot()["gc_settled"] is True
    finally:
        fleet.stats.gc.remove()
