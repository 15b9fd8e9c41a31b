"""A realistic fleet sends heartbeats from a thread and loop of their own (client/fleet/beats.py):
a main loop held by allocation work (here, watch answers that block it) does not hold them up,
and a node the servers marked down re-sends its allocations' state through the main loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from client.fleet import base
from client.fleet.fleet import Fleet

pytestmark = pytest.mark.unit
TTL_NS = 50_000_000


class FakeServers:
    def __init__(self) -> None:
        self.beats: list[tuple[float, str]] = []  # (when, the sending thread's name)
        self.busy: list[tuple[float, float]] = []  # the windows a watch answer held the main loop
        self.lock = threading.Lock()
        self.initializing_once = True

    def handle(self, request: httpx.Request) -> Any:
        path = request.url.path
        if path == "/v1/node/register":
            return httpx.Response(200, json={"HeartbeatTTL": TTL_NS})
        if path.endswith("/heartbeat"):
            with self.lock:
                self.beats.append((time.monotonic(), threading.current_thread().name))
                status = "initializing" if self.initializing_once else "ready"
                self.initializing_once = False
            return httpx.Response(200, json={"HeartbeatTTL": TTL_NS, "NodeStatus": status})
        if path.endswith("/allocations") and request.method == "GET":
            return self._watch()
        return httpx.Response(200, json={})

    async def _watch(self) -> httpx.Response:
        began = time.monotonic()
        time.sleep(0.3)  # the main loop busy with allocation work, as in a placement storm
        with self.lock:
            self.busy.append((began, time.monotonic()))
        await asyncio.sleep(0.01)  # then the answer travels, as over a socket
        return httpx.Response(200, json=[], headers={"X-Nomad-Index": "1"})


def test_heartbeats_go_out_while_the_main_loop_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    servers = FakeServers()

    def mocked(url: str, address: str | None, size: int, tls: Any = None, keep: Any = None) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, transport=httpx.MockTransport(servers.handle))

    monkeypatch.setattr(base, "async_client", mocked)
    stop = threading.Event()
    fleet = Fleet(base.FleetConfig(server="http://10.0.0.1:4646", nodes=3, nodes_per_address=0), stop)
    resent: list[str] = []
    monkeypatch.setattr(fleet, "_resend", lambda node: resent.append(threading.current_thread().name))
    runner = threading.Thread(target=fleet.run)
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(servers.busy) < 6:
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(30)
    assert not runner.is_alive()
    assert fleet.lane is not None and not fleet.lane._thread.is_alive()
    assert servers.beats and {name for _, name in servers.beats} == {"fleet-heartbeats"}
    during = [when for when, _ in servers.beats if any(a < when < b for a, b in servers.busy)]
    assert during, "no heartbeat went out while a watch answer held the main loop"
    # The one "initializing" answer: the node's state is re-sent from the fleet's main loop.
    assert resent == [runner.name]
