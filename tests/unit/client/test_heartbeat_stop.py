"""Heartbeat stop: a group's disconnect.stop_on_client_after (or the older
stop_after_client_disconnect) says how long out of contact its allocation may keep running."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from client.agent import Client
from client.config import ClientConfig, GcConfig
from client.disconnect import due, stop_after_s
from tests.unit.client.test_agent_loops import FakeServers, eventually

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def _alloc(**group: Any) -> dict[str, Any]:
    return {"TaskGroup": "g", "Job": {"TaskGroups": [{"Name": "other"}, {"Name": "g", **group}]}}


def test_either_spelling_sets_the_delay() -> None:
    assert stop_after_s(_alloc(Disconnect={"StopOnClientAfter": 30 * NANOS})) == 30.0
    assert stop_after_s(_alloc(StopAfterClientDisconnect=5 * NANOS)) == 5.0
    assert stop_after_s(_alloc(Disconnect={"LostAfter": NANOS})) is None
    assert stop_after_s({"TaskGroup": "g"}) is None


def test_due_only_after_the_delay_since_the_last_contact() -> None:
    alloc = _alloc(Disconnect={"StopOnClientAfter": 10 * NANOS})
    assert not due(alloc, last_contact=100.0, now=109.0)
    assert due(alloc, last_contact=100.0, now=110.5)
    assert not due(alloc, last_contact=None, now=1e9)  # never in contact: nothing to measure from
    assert not due(_alloc(), last_contact=0.0, now=1e9)


def test_a_client_out_of_contact_stops_only_the_allocation_that_asked(tmp_path: Path) -> None:
    servers = FakeServers()
    stop = threading.Event()
    config = ClientConfig(data_dir=tmp_path, drivers=("mock",), gc=GcConfig(interval_s=0.05), sync_interval_s=0.02)
    agent = Client(config, stop)
    agent.api._http = httpx.Client(base_url="http://servers.test", transport=httpx.MockTransport(servers.handle))
    agent.api.node_id, agent.api.secret = uuid.uuid4(), "secret"
    servers.place("keep")
    servers.place("stops")
    servers.allocs["stops"]["Job"]["TaskGroups"][0]["Disconnect"] = {"StopOnClientAfter": NANOS // 2}
    try:
        agent.start_loops(ttl=0.05)
        assert eventually(
            lambda: all(r.client_status == "running" for r in agent._runner_list()) and len(agent.runners) == 2
        )
        real = servers.handle
        servers.handle = lambda request: (  # type: ignore[method-assign]
            httpx.Response(503) if request.url.path.endswith("/heartbeat") else real(request)
        )
        agent.api._http = httpx.Client(base_url="http://servers.test", transport=httpx.MockTransport(servers.handle))
        assert eventually(lambda: agent.runners["stops"].terminal), agent.runners["stops"].update()
        assert agent.runners["stops"].client_status == "complete"
        assert agent.runners["keep"].client_status == "running" and not agent.runners["keep"].stopping
    finally:
        stop.set()
        for runner in agent._runner_list():
            runner.stop()
        for thread in agent.threads.values():
            thread.join(timeout=10)
