"""The client's loops survive what they do not expect (issue 23): the servers failing while a
placed allocation is fetched, an allocation's directory collected under the watch loop, an
exception inside any loop. A client whose watch loop is dead or wedged stops heartbeating, so
the servers mark its node down instead of leaving work pending on a node that looks ready."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.wire.api.api_nodes import AllocUpdateJson, ClientAllocJson
from client.agent import Client
from client.config import ClientConfig, GcConfig
from workers.loops import Backoff, guarded

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def full_alloc(alloc_id: str) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Config": {"run_for": "1h"}}
    return {
        "ID": alloc_id,
        "Name": "web.g[0]",
        "TaskGroup": "g",
        "DesiredStatus": "run",
        "ClientStatus": "pending",
        "Job": {"ID": "web", "Type": "service", "TaskGroups": [{"Name": "g", "Tasks": [task]}]},
    }


class FakeServers:
    """The REST API a client talks to, in memory. `fail_fetches` answers 500 to that many
    fetches of a placed allocation (a server killed mid-request looks the same to a client)."""

    def __init__(self) -> None:
        self.allocs: dict[str, dict[str, Any]] = {}
        self.index = 1
        self.fail_fetches = 0
        self.fetches = 0  # of one allocation (GET /v1/allocation/:id)
        self.send_whole = True  # False: the watch sends no allocation whole, the client fetches them
        self.heartbeats = 0
        self.node_status = "ready"  # as the servers see the node; down/disconnected refuse reports
        self.reports: list[dict[str, Any]] = []  # every allocation update the client sent, in order
        self.lock = threading.Lock()

    def place(self, alloc_id: str, desired: str = "run") -> None:
        with self.lock:
            self.index += 1
            self.allocs[alloc_id] = {**full_alloc(alloc_id), "DesiredStatus": desired, "AllocModifyIndex": self.index}

    def entry(self, alloc: dict[str, Any], since: int) -> dict[str, Any]:
        """The watch's entry (?client_since): whole if changed past `since` and whole ones are sent."""
        whole = self.send_whole and alloc["AllocModifyIndex"] > since
        fields = ("ID", "AllocModifyIndex", "DesiredStatus", "ClientStatus")
        stub = {k: alloc[k] for k in fields}
        return {**stub, "DeploymentID": "", "DesiredTransition": {}, "Allocation": alloc if whole else None}

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/heartbeat"):
            wanted = json.loads(request.content or b"{}").get("Status")
            with self.lock:
                self.heartbeats += 1
                if self.node_status in ("down", "disconnected"):
                    self.node_status = "initializing"
                elif self.node_status == "initializing" and wanted == "ready":
                    self.node_status = "ready"
                status = self.node_status
            return httpx.Response(200, json={"HeartbeatTTL": NANOS // 20, "NodeStatus": status, "ForceGCIndex": 0})
        if path == "/v1/node/register":
            return httpx.Response(200, json={"HeartbeatTTL": NANOS // 20})
        if path.startswith("/v1/node/") and path.endswith("/allocations"):
            if request.method == "PUT":
                with self.lock:
                    refused = self.node_status in ("down", "disconnected")
                    if not refused:
                        self.reports.extend(json.loads(request.content)["Allocs"])
                return httpx.Response(409, json={"title": "Conflict"}) if refused else httpx.Response(200, json={})
            if int(request.url.params.get("index", "0")) >= self.index:
                time.sleep(0.02)  # a short blocking query
            since = int(request.url.params.get("client_since", "0"))
            with self.lock:
                entries = [self.entry(a, since) for a in self.allocs.values()]
                return httpx.Response(200, json=entries, headers={"X-Nomad-Index": str(self.index)})
        if path.startswith("/v1/allocation/"):
            with self.lock:
                self.fetches += 1
                if self.fail_fetches > 0:
                    self.fail_fetches -= 1
                    return httpx.Response(500, json={"title": "Internal Server Error"})
                found = self.allocs.get(path.rsplit("/", 1)[1])
            return httpx.Response(200, json=found) if found else httpx.Response(404)
        return httpx.Response(404)


@pytest.fixture
def servers() -> FakeServers:
    return FakeServers()


@pytest.fixture
def client(tmp_path: Path, servers: FakeServers) -> Iterator[Client]:
    yield from running_client(tmp_path, servers, sync_interval_s=0.02)


def running_client(tmp_path: Path, servers: FakeServers, sync_interval_s: float) -> Iterator[Client]:
    stop = threading.Event()
    config = ClientConfig(
        data_dir=tmp_path, drivers=("mock",), gc=GcConfig(interval_s=0.05), sync_interval_s=sync_interval_s
    )
    agent = Client(config, stop)
    agent.api._http = httpx.Client(base_url="http://servers.test", transport=httpx.MockTransport(servers.handle))
    agent.api.node_id, agent.api.secret = uuid.uuid4(), "secret"
    yield agent
    stop.set()
    agent.sync_wake.set()  # its wait may be long
    for runner in agent._runner_list():
        with contextlib.suppress(OSError):  # one test removes a directory under its runner
            runner.stop()
    for thread in agent.threads.values():
        thread.join(timeout=10)


def eventually(condition: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def test_the_watch_loop_survives_a_server_error_while_fetching_a_placed_allocation(
    client: Client, servers: FakeServers
) -> None:
    servers.fail_fetches, servers.send_whole = 2, False
    servers.place("a1")
    client.start_loops(ttl=0.05)

    # The fetch fails twice; the loop must ask again (the index must not move past the
    # placement) and run the allocation, without anything else changing on the servers.
    assert eventually(lambda: "a1" in client.runners), "the placed allocation never ran"
    assert client.threads["watch"].is_alive()
    servers.place("a2")
    assert eventually(lambda: "a2" in client.runners)
    assert client.unhealthy() is None


def test_a_placement_runs_from_the_watchs_answer_without_fetching_it(client: Client, servers: FakeServers) -> None:
    """The servers send a new allocation whole in the watch's answer: no second round trip."""
    servers.place("a1")
    client.start_loops(ttl=0.05)
    assert eventually(lambda: "a1" in client.runners)
    assert client.runners["a1"].id == "a1" and servers.fetches == 0


def test_the_watch_loop_survives_an_allocation_directory_collected_under_it(
    client: Client, servers: FakeServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers.place("a1")
    client.start_loops(ttl=0.05)
    assert eventually(lambda: "a1" in client.runners)
    runner = client.runners["a1"]
    assert eventually(lambda: runner.client_status == "running")
    # GC removed the directory (its destroy raced the watch loop), then the servers stop the
    # allocation: stopping it writes its record into the directory that is gone.
    runner.dir.rename(runner.dir.with_name("collected"))  # atomically gone, as after GC's rmtree
    original_stop = runner.stop

    def stop_into_a_missing_directory(no_shutdown_delay: bool = False) -> None:
        runner.persist()  # into the missing directory: logged, not raised (it once raised here)
        original_stop(no_shutdown_delay)

    monkeypatch.setattr(runner, "stop", stop_into_a_missing_directory)
    servers.place("a1", desired="stop")
    time.sleep(0.3)
    servers.place("a2")
    assert eventually(lambda: "a2" in client.runners), "the watch loop died on the collected directory"
    assert client.threads["watch"].is_alive()


def test_a_client_whose_watch_loop_is_dead_stops_heartbeating(client: Client, servers: FakeServers) -> None:
    client.start_loops(ttl=0.05)
    assert eventually(lambda: servers.heartbeats > 2)
    # Something the loops never expected, outside any per-allocation handling: a BaseException
    # ends the watch thread (as a bug could); the heartbeat must notice and stop.
    client.threads["watch"] = dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    assert client.unhealthy() == "the watch loop is dead"
    time.sleep(0.2)
    before = servers.heartbeats
    time.sleep(1.5)
    assert servers.heartbeats == before, "a client with a dead watch loop kept heartbeating"


def test_a_client_whose_watch_loop_is_wedged_stops_heartbeating_and_resumes_after(
    client: Client, servers: FakeServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = client.api.node_allocations

    def wedged(index: int, wait_s: float = 30.0) -> tuple[list[ClientAllocJson], int]:
        release.wait(30)
        return real(index, wait_s)

    monkeypatch.setattr(client.api, "node_allocations", wedged)
    client.watch_stall_s = 0.5
    client.start_loops(ttl=0.05)
    assert eventually(lambda: client.unhealthy() is not None)
    time.sleep(0.2)
    before = servers.heartbeats
    time.sleep(1.5)
    assert servers.heartbeats == before, "a client with a wedged watch loop kept heartbeating"
    release.set()
    assert eventually(lambda: servers.heartbeats > before), "heartbeats did not resume"


def test_every_client_loop_survives_an_injected_exception(
    client: Client, servers: FakeServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    boom = {"judge": 2, "collect": 2, "heartbeat": 2}
    real_judge, real_collect, real_beat = client._judge_health, client.gc.collect, client.api.heartbeat

    def flaky(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if boom[name] > 0:
                boom[name] -= 1
                raise RuntimeError(f"injected into {name}")
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(client, "_judge_health", flaky("judge", real_judge))
    monkeypatch.setattr(client.gc, "collect", flaky("collect", real_collect))
    monkeypatch.setattr(client.api, "heartbeat", flaky("heartbeat", real_beat))
    client.start_loops(ttl=0.05)
    assert eventually(lambda: boom == {"judge": 0, "collect": 0, "heartbeat": 0})
    before = servers.heartbeats
    assert eventually(lambda: servers.heartbeats > before + 2)
    assert all(thread.is_alive() for thread in client.threads.values())
    assert client.unhealthy() is None


def test_guarded_backs_off_and_carries_on_and_exits_on_fatal() -> None:
    stop, rounds, fatal = threading.Event(), [], []

    def step() -> None:
        rounds.append(1)
        if len(rounds) < 3:
            raise ValueError("injected")
        stop.set()

    guarded("probe", step, stop, Backoff(base=0.001, cap=0.01), on_fatal=lambda n, e: fatal.append(n))
    assert len(rounds) == 3 and fatal == []

    def dies() -> None:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        guarded("probe", dies, threading.Event(), on_fatal=lambda n, e: fatal.append(n))
    assert fatal == ["probe"]


def test_backoff_is_capped_and_jittered() -> None:
    backoff = Backoff(base=1.0, cap=8.0)
    delays = [backoff.next() for _ in range(10)]
    assert all(0.5 <= d <= 8.0 for d in delays)
    assert max(delays[5:]) > 4.0
    backoff.reset()
    assert backoff.next() <= 1.0


def test_a_refused_resend_does_not_stop_the_heartbeat_that_unblocks_it(client: Client, servers: FakeServers) -> None:
    # The servers marked the node disconnected while the client was silent: they refuse its
    # allocation reports until it heartbeats. A client that waited for its re-send to succeed
    # before heartbeating would never come back.
    servers.place("a1")
    client.start_loops(ttl=0.05)
    assert eventually(lambda: "a1" in client.runners and client.runners["a1"].client_status == "running")
    with servers.lock:
        servers.node_status = "disconnected"
    client.synced = False  # as after a heartbeat answered "initializing"
    assert eventually(lambda: servers.node_status == "ready" and client.synced), servers.node_status


def test_a_client_out_of_contact_stops_only_the_allocation_that_asked_to_be(tmp_path: Path) -> None:
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

        def refusing_heartbeats(request: httpx.Request) -> httpx.Response:
            return httpx.Response(503) if request.url.path.endswith("/heartbeat") else servers.handle(request)

        agent.api._http = httpx.Client(
            base_url="http://servers.test", transport=httpx.MockTransport(refusing_heartbeats)
        )
        assert eventually(lambda: agent.runners["stops"].terminal), agent.runners["stops"].update()
        assert agent.runners["stops"].client_status == "complete"
        assert agent.runners["keep"].client_status == "running" and not agent.runners["keep"].stopping
    finally:
        stop.set()
        for runner in agent._runner_list():
            runner.stop()
        for thread in agent.threads.values():
            thread.join(timeout=10)


@pytest.fixture
def slow_syncing_client(tmp_path: Path, servers: FakeServers) -> Iterator[Client]:
    """A client whose batch tick is an hour away: only a status change can make it send."""
    yield from running_client(tmp_path, servers, sync_interval_s=3600)


def test_a_task_turning_running_is_reported_without_waiting_for_the_batch_tick(
    slow_syncing_client: Client, servers: FakeServers
) -> None:
    client = slow_syncing_client
    client.start_loops(ttl=0.05)
    assert eventually(lambda: client.synced), "the first heartbeat never re-sent the (empty) state"
    servers.place("a1")

    def reported(status: str) -> bool:
        with servers.lock:
            return any(r["ID"] == "a1" and r["ClientStatus"] == status for r in servers.reports)

    assert eventually(lambda: reported("running")), "the running state waited for the batch tick"
    client.runners["a1"].stop(no_shutdown_delay=True)
    assert eventually(lambda: reported("complete")), "the terminal state waited for the batch tick"


def test_a_new_allocations_pending_report_waits_for_its_first_change(
    slow_syncing_client: Client, servers: FakeServers
) -> None:
    """The servers hold pending already: the runner's first report does not wake the sync loop
    (an API write and the client's own watch answered again while the driver starts the task);
    running goes out at once, with the task states held meanwhile."""
    client = slow_syncing_client
    client.start_loops(ttl=0.05)
    assert eventually(lambda: client.synced), "the first heartbeat never re-sent the (empty) state"
    servers.place("a1")

    def sent() -> list[str]:
        with servers.lock:
            return [str(r["ClientStatus"]) for r in servers.reports if r["ID"] == "a1"]

    assert eventually(lambda: "running" in sent()), "the running state waited for the batch tick"
    assert sent()[0] == "running", f"a pending report went out first: {sent()}"
    assert sent()[-1] == "running" and "a1" not in client.held  # a change ends the hold


def test_a_held_pending_report_goes_out_once_its_hold_ends(client: Client, servers: FakeServers) -> None:
    body: AllocUpdateJson = {"ID": "a1", "ClientStatus": "pending", "ClientDescription": "", "TaskStates": {}}
    client.held["a1"] = time.monotonic() + 3600
    client.dirty["a1"] = body
    assert client._flush() and servers.reports == [] and client.dirty["a1"] is body
    client.held["a1"] = time.monotonic() - 1  # its FIRST_REPORT_HOLD_S are over, still pending
    assert client._flush() and servers.reports == [body] and "a1" not in client.held and not client.dirty
