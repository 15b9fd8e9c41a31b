"""The simulated fleet waits out a busy server at registration instead of exiting."""

from __future__ import annotations

import threading

import httpx
import pytest

from workers.client.fleet import NANOS, Fleet, FleetConfig

pytestmark = pytest.mark.unit


def _fleet(handler: httpx.MockTransport) -> Fleet:
    fleet = Fleet(FleetConfig(server="http://corral.test", nodes=2, threads=2), threading.Event())
    fleet.http = httpx.Client(base_url="http://corral.test", transport=handler)
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
        return httpx.Response(200, json={"HeartbeatTTL": 7 * NANOS})

    fleet = _fleet(httpx.MockTransport(answer))
    fleet.register_all()
    assert sorted(seen.values()) == [3, 3]
    assert all(node.ttl_s == 7 for node in fleet.nodes.values())


def test_a_refused_node_ends_registration_with_the_error() -> None:
    fleet = _fleet(httpx.MockTransport(lambda request: httpx.Response(400, json={"detail": "Node.Name: bad"})))
    with pytest.raises(httpx.HTTPStatusError):
        fleet.register_all()
