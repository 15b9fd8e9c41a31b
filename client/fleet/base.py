"""The simulated fleet's configuration, its nodes and the state its loops share: the HTTP
clients, the concurrency gates, the counters and the allocations it runs. The loops build on
this, one module each (fleet_allocs, fleet_watch, fleet_nodes), and fleet.py runs them."""

from __future__ import annotations

import asyncio
import random
import ssl
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
import structlog

from app.wire.api.api_nodes import AllocUpdateJson
from client.api import WATCH_WAIT_S
from client.fleet.beats import HeartbeatLane
from client.fleet.http import (
    BEAT_CONNECTIONS,
    FILES_PER_NODE,
    NODE_CONNECTIONS,
    async_client,
    compact_connections,
    loopback_url,
    raise_open_files,
    source_addresses,
)
from client.fleet.identity import identities, node_names
from client.fleet.stats import FleetStats, expected_failure, failure_kind, write_stats_file

log = structlog.get_logger("client.fleet.fleet")
T = TypeVar("T")
NANOS = 1_000_000_000
Mode = Literal["realistic", "compact"]
# A node's pending allocation updates: allocation ID -> the update as the servers take it.
Updates = dict[str, AllocUpdateJson]


@dataclass
class SimNode:
    id: uuid.UUID
    name: str
    secret: str
    ttl_s: float = 10.0
    slot: int = 0  # which source address it connects from
    client: int = 0  # which of the fleet's HTTP clients it uses
    registered: bool = False
    sync_after: float = 0.0  # monotonic time before which a failed status batch is not resent
    sync_failures: int = 0


@dataclass(frozen=True)
class FleetConfig:
    server: str
    nodes: int
    name_prefix: str = "sim"
    datacenter: str = "dc1"
    cpu_mhz: int = 4000
    memory_mb: int = 8192
    threads: int = 16  # registrations in flight at once (and, in compact mode, every request)
    sync_interval_s: float = 0.2
    mode: Mode = "realistic"
    nodes_per_address: int = 30  # 0: never bind source addresses
    watch_wait_s: float = WATCH_WAIT_S
    stats_file: Path | None = None
    data_dir: Path | None = None  # keeps node IDs and secrets across restarts (fleet_identity)


class FleetBase:
    def __init__(self, config: FleetConfig, stop: threading.Event) -> None:
        self.config, self.stop = config, stop
        self.base = loopback_url(config.server.rstrip("/"))
        self.addresses = source_addresses(self.base, config.nodes, config.nodes_per_address)
        names = node_names(config.name_prefix, config.nodes)
        self.nodes = {i.id: SimNode(i.id, i.name, i.secret) for i in identities(names, config.data_dir)}
        for i, node in enumerate(self.nodes.values()):
            node.slot = i * len(self.addresses) // max(1, config.nodes)
        self.stats = FleetStats()
        self.lock = threading.Lock()  # guards stats: benchmarks read them from another thread
        self.known: dict[str, uuid.UUID] = {}  # alloc id -> node id, for allocations this fleet runs
        self.last: dict[str, AllocUpdateJson] = {}  # alloc id -> the last update reported
        self.dirty: dict[uuid.UUID, Updates] = defaultdict(dict)  # node -> alloc -> update
        self.jobs: dict[tuple[str, str, int], dict[str, Any]] = {}  # compact mode's job cache
        self.clients: list[httpx.AsyncClient] = []
        self.rng = random.Random()
        self._gate: asyncio.Semaphore | None = None
        self._beat_gate: asyncio.Semaphore | None = None
        # Realistic mode: the heartbeats' own thread and loop (client/fleet/beats.py), and the
        # loop every other loop of the fleet runs in.
        self.lane: HeartbeatLane | None = None
        self.main_loop: asyncio.AbstractEventLoop | None = None
        self._logged: set[tuple[str, str]] = set()

    # -- HTTP ----------------------------------------------------------------------------

    def _open_clients(self) -> None:
        """Realistic: a client per node, from its source address; compact: one per address."""
        if self.clients:
            return  # a test may have put its own in
        tls = httpx.create_ssl_context()
        if self.config.mode == "compact":
            size = compact_connections(self.config.threads)
            self.clients = [async_client(self.base, address, size, tls) for address in self.addresses]
            for node in self.nodes.values():
                node.client = node.slot
            return
        limit = raise_open_files(len(self.nodes))
        if limit < len(self.nodes) * FILES_PER_NODE:
            log.warning("the open-file limit may be too low for this fleet", limit=limit, nodes=len(self.nodes))
        for i, node in enumerate(self.nodes.values()):
            address = self.addresses[node.slot % len(self.addresses)]
            self.clients.append(async_client(self.base, address, NODE_CONNECTIONS, tls))
            node.client = i
        self.lane = HeartbeatLane(lambda node_id: self._beat_client(node_id, tls))

    def _beat_client(self, node_id: uuid.UUID, tls: ssl.SSLContext) -> httpx.AsyncClient:
        """A realistic node's heartbeat client, from the node's own source address."""
        node = self.nodes[node_id]
        address = self.addresses[node.slot % len(self.addresses)]
        # Not kept between beats: the next one is a TTL away (200 s at 10,000 nodes), and the
        # servers close an idle connection long before, so a kept one only held a descriptor.
        return async_client(self.base, address, BEAT_CONNECTIONS, tls, keep=0)

    def _http(self, node: SimNode) -> httpx.AsyncClient:
        if self.lane is not None and self.lane.here():
            return self.lane.client(node.id)
        return self.clients[node.client % len(self.clients)]

    async def _on_main(self, work: Coroutine[object, None, T]) -> T:
        """Run `work` in the fleet's main loop, from the heartbeat lane or from the main loop."""
        if self.main_loop is None or self.lane is None or not self.lane.here():
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.main_loop))

    def _call_on_main(self, fn: Callable[[SimNode], None], node: SimNode) -> None:
        if self.main_loop is not None and self.lane is not None and self.lane.here():
            self.main_loop.call_soon_threadsafe(fn, node)
        else:
            fn(node)

    def _gated(self) -> asyncio.Semaphore:
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.config.threads)
        return self._gate

    def _beat_gated(self) -> asyncio.Semaphore:
        """Compact mode's heartbeats: a concurrency of their own, so slow status updates or
        fetches never hold a heartbeat back."""
        if self._beat_gate is None:
            self._beat_gate = asyncio.Semaphore(self.config.threads)
        return self._beat_gate

    # -- failures and figures ------------------------------------------------------------

    def _failure(self, loop: str, node: SimNode | None, err: BaseException) -> None:
        """Count a failure; log the first of each kind with its context."""
        kind = failure_kind(loop, err)
        with self.lock:
            self.stats.errors[kind] += 1
        if (loop, kind) in self._logged:
            return
        self._logged.add((loop, kind))
        context = {"loop": loop, "node": node.name if node else None, "error": str(err) or type(err).__name__}
        if expected_failure(err):
            log.warning("fleet request failed; backing off (further failures of this kind are counted)", **context)
        else:
            log.exception("unexpected error in a fleet loop; backing off and carrying on", **context)

    def _summary(self) -> None:
        with self.lock:
            snapshot = self.stats.snapshot()
        log.info("fleet", **snapshot)
        if self.config.stats_file is not None:
            try:
                write_stats_file(self.config.stats_file, snapshot)
            except OSError as err:
                self._failure("stats", None, err)
