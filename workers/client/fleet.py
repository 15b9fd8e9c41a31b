"""A simulated fleet (like Nomad's nodesim): one process registers and heartbeats thousands of
`mock` nodes, runs their allocations on a timer heap (no thread per task) and reports status in
per-node batches, through the same REST protocol as `corral client`. For tests and benchmarks.

Allocations are found with one cluster-wide blocking query instead of one per node; a mock
task's `run_for`, `exit_code` and `start_error` are honoured (restart policies are not)."""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import structlog

from app.jobspec.durations import DurationError, duration_ns
from workers.client.drivers import fingerprint as driver_fingerprint

log = structlog.get_logger(__name__)
NANOS = 1_000_000_000
WATCH_WAIT_S = 10
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
REGISTER_BACKOFF_CAP_S = 10.0


@dataclass
class SimNode:
    id: uuid.UUID
    name: str
    secret: str
    ttl_s: float = 10.0


@dataclass
class FleetStats:
    heartbeats: int = 0
    failures: int = 0
    latencies_s: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class FleetConfig:
    server: str
    nodes: int
    name_prefix: str = "sim"
    datacenter: str = "dc1"
    cpu_mhz: int = 4000
    memory_mb: int = 8192
    threads: int = 16
    sync_interval_s: float = 0.2


class Fleet:
    def __init__(self, config: FleetConfig, stop: threading.Event) -> None:
        self.config, self.stop = config, stop
        self.http = httpx.Client(
            base_url=config.server.rstrip("/"),
            timeout=30,
            limits=httpx.Limits(max_connections=config.threads * 2, max_keepalive_connections=config.threads * 2),
        )
        self.nodes = {
            (node_id := uuid.uuid4()): SimNode(node_id, f"{config.name_prefix}-{i:05}", str(uuid.uuid4()))
            for i in range(config.nodes)
        }
        self.stats = FleetStats()
        self.lock = threading.Lock()
        self.timers: list[tuple[float, int, str, str]] = []  # (due, seq, alloc id, final status)
        self.seq = 0
        self.known: dict[str, str] = {}  # alloc id -> node id, for allocations this fleet runs
        self.dirty: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)  # node id -> alloc id -> update
        self.jobs: dict[tuple[str, str, int], dict[str, Any]] = {}

    def node_body(self, node: SimNode) -> dict[str, Any]:
        return {
            "ID": str(node.id),
            "SecretID": node.secret,
            "Name": node.name,
            "Datacenter": self.config.datacenter,
            "Status": "ready",
            "Attributes": {"kernel.name": "linux", "unique.hostname": node.name, "driver.mock": "1"},
            "Drivers": driver_fingerprint(("mock",)),
            "NodeResources": {
                "Cpu": {"CpuShares": self.config.cpu_mhz},
                "Memory": {"MemoryMB": self.config.memory_mb},
                "Disk": {"DiskMB": 100_000},
            },
        }

    def register_all(self) -> None:
        def register(node: SimNode) -> None:
            # A busy or restarting server (503, 429, a dropped connection) is waited out, as a
            # real client would; only a refusal of the node itself (another 4xx) ends the fleet.
            backoff = random.Random(node.id.int)
            for attempt in itertools.count():
                try:
                    reply = self.http.put("/v1/node/register", json={"Node": self.node_body(node)})
                except httpx.TransportError as err:
                    log.warning("node registration failed; retrying", node=node.name, error=str(err))
                else:
                    if reply.status_code not in RETRYABLE_STATUSES:
                        reply.raise_for_status()
                        node.ttl_s = reply.json()["HeartbeatTTL"] / NANOS
                        return
                    log.warning("node registration refused for now; retrying", node=node.name, status=reply.status_code)
                if self.stop.wait(min(REGISTER_BACKOFF_CAP_S, 0.5 * 2**attempt) * backoff.uniform(0.5, 1.0)):
                    return

        with ThreadPoolExecutor(self.config.threads) as pool:
            list(pool.map(register, self.nodes.values()))

    def run(self) -> None:
        self.register_all()
        log.info("fleet registered", nodes=len(self.nodes))
        threads = [
            threading.Thread(target=self._heartbeats, name="fleet-heartbeats", daemon=True),
            threading.Thread(target=self._watch, name="fleet-watch", daemon=True),
            threading.Thread(target=self._tasks, name="fleet-tasks", daemon=True),
            threading.Thread(target=self._sync, name="fleet-sync", daemon=True),
        ]
        for thread in threads:
            thread.start()
        self.stop.wait()
        self.http.close()

    # -- heartbeats: a heap of due times, sent by a pool ----------------------------------

    def _heartbeats(self) -> None:
        now = time.monotonic()
        # Start spread over the first TTL, as a fleet that registered over time would be.
        due = [(now + (i % 1000) / 1000 * node.ttl_s, i, node) for i, node in enumerate(self.nodes.values())]
        heapq.heapify(due)
        with ThreadPoolExecutor(self.config.threads) as pool:
            while not self.stop.is_set():
                at, i, node = due[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self.stop.wait(min(wait, 0.5))
                    continue
                heapq.heappop(due)
                pool.submit(self._beat, node)
                heapq.heappush(due, (time.monotonic() + node.ttl_s * 0.9, i, node))

    def _beat(self, node: SimNode) -> None:
        began = time.monotonic()
        try:
            reply = self.http.put(
                f"/v1/node/{node.id}/heartbeat", json={"Status": "ready"}, headers={"X-Nomad-Token": node.secret}
            )
            reply.raise_for_status()
            node.ttl_s = reply.json()["HeartbeatTTL"] / NANOS
        except httpx.HTTPError:
            with self.lock:
                self.stats.failures += 1
            return
        with self.lock:
            self.stats.heartbeats += 1
            self.stats.latencies_s.append(time.monotonic() - began)

    # -- allocations ---------------------------------------------------------------------

    def _watch(self) -> None:
        index = 0
        while not self.stop.is_set():
            try:
                reply = self.http.get(
                    "/v1/allocations",
                    params={"index": index, "wait": f"{WATCH_WAIT_S}s", "namespace": "*"},
                    timeout=WATCH_WAIT_S * 2,
                )
                reply.raise_for_status()
            except httpx.HTTPError as err:
                log.warning("fleet watch failed", error=str(err))
                self.stop.wait(1.0)
                continue
            latest = int(reply.headers.get("X-Nomad-Index", "0"))
            index = latest if latest >= index else 0
            for alloc in reply.json():
                self._consider(alloc)

    def _consider(self, alloc: dict[str, Any]) -> None:
        node_id = uuid.UUID(alloc["NodeID"])
        if node_id not in self.nodes:
            return
        alloc_id = alloc["ID"]
        with self.lock:
            seen = alloc_id in self.known
        if alloc["DesiredStatus"] != "run" and seen and alloc["ClientStatus"] in ("pending", "running"):
            self._report(alloc_id, "complete", "stopped by the servers")
            return
        if seen or alloc["DesiredStatus"] != "run" or alloc["ClientStatus"] != "pending":
            return
        with self.lock:
            self.known[alloc_id] = str(node_id)
        config = self._mock_config(alloc)
        if config.get("start_error"):
            self._report(alloc_id, "failed", str(config["start_error"]))
            return
        self._report(alloc_id, "running", "Tasks are running")
        run_for = config.get("run_for")
        if run_for is None:
            return
        try:
            seconds = duration_ns(run_for) / NANOS
        except DurationError:
            seconds = 0.0
        final = "complete" if int(config.get("exit_code", 0)) == 0 else "failed"
        with self.lock:
            self.seq += 1
            heapq.heappush(self.timers, (time.monotonic() + seconds, self.seq, alloc_id, final))

    def _mock_config(self, alloc: dict[str, Any]) -> dict[str, Any]:
        key = (alloc["Namespace"], alloc["JobID"], int(alloc["JobVersion"]))
        if key not in self.jobs:
            full = self.http.get(f"/v1/allocation/{alloc['ID']}").json()
            self.jobs[key] = full.get("Job") or {}
        groups: list[dict[str, Any]] = self.jobs[key].get("TaskGroups") or []
        group = next((g for g in groups if g["Name"] == alloc["TaskGroup"]), {})
        tasks = group.get("Tasks") or [{}]
        return dict(tasks[0].get("Config") or {})

    def _tasks(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                ready = []
                while self.timers and self.timers[0][0] <= time.monotonic():
                    ready.append(heapq.heappop(self.timers))
            for _, _, alloc_id, final in ready:
                self._report(alloc_id, final, "Exit status" if final == "complete" else "Failed tasks")
            self.stop.wait(0.05)

    def _report(self, alloc_id: str, status: str, description: str) -> None:
        state = "running" if status == "running" else "dead"
        with self.lock:
            node_id = self.known.get(alloc_id)
            if node_id is None:
                return
            self.dirty[node_id][alloc_id] = {
                "ID": alloc_id,
                "ClientStatus": status,
                "ClientDescription": description,
                "TaskStates": {"t": {"State": state, "Failed": status == "failed", "Restarts": 0}},
            }

    def _sync(self) -> None:
        with ThreadPoolExecutor(self.config.threads) as pool:
            while not self.stop.wait(self.config.sync_interval_s):
                with self.lock:
                    batches, self.dirty = dict(self.dirty), defaultdict(dict)
                list(pool.map(lambda item: self._send(*item), batches.items()))

    def _send(self, node_id: str, updates: dict[str, dict[str, Any]]) -> None:
        node = self.nodes[uuid.UUID(node_id)]
        try:
            self.http.put(
                f"/v1/node/{node_id}/allocations",
                json={"Allocs": list(updates.values())},
                headers={"X-Nomad-Token": node.secret},
            ).raise_for_status()
        except httpx.HTTPError as err:
            log.warning("fleet status update failed; will retry", error=str(err))
            with self.lock:
                for alloc_id, update in updates.items():
                    self.dirty[node_id].setdefault(alloc_id, update)


def run_fleet(config: FleetConfig, stop: threading.Event) -> Fleet:
    fleet = Fleet(config, stop)
    fleet.run()
    return fleet
