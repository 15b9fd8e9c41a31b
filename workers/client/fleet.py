"""A simulated fleet (like Nomad's nodesim): one process registers and heartbeats thousands of
`mock` nodes, runs their allocations on timers (no thread per task) and reports status in
per-node batches, through the same REST protocol as `corral client`. For tests and benchmarks.

Two modes:

- `realistic` (the default, and what benchmarks use): every node talks to the servers as a
  `corral client` does. It registers, heartbeats at the TTL the servers answer, and holds its own
  blocking query on `GET /v1/node/<id>/allocations?index=…&wait=30s` (its SecretID in
  X-Nomad-Token), fetches each allocation placed on it, and reports its status. So N nodes hold
  N long polls, as a real fleet of N clients does.
- `compact`: one cluster-wide blocking query on `/v1/allocations` finds every node's
  allocations; heartbeats are the same. Much cheaper for the servers than a real fleet.

A mock task's `run_for`, `exit_code` and `start_error` are honoured (restart policies are not).

Every loop (registration, heartbeats, watch, status sync) waits out 429, 5xx and transport
errors with capped, jittered exponential backoff, and survives any unexpected exception: it is
logged once per kind with its context, counted, backed off, and the loop carries on. Only a
registration the servers refuse outright (another 4xx: the node itself is wrong, and every node
is built alike) ends the fleet.

Why asyncio with httpx.AsyncClient rather than threads or gevent: thousands of concurrent long
polls must not cost a thread each (a 5,000-thread process spends its time switching and its
memory on stacks), and gevent would monkey-patch the whole process, which the benchmarks that
run a Fleet inside their own process must not inherit. asyncio keeps each node a few coroutines
and one socket per poll, and httpx is the HTTP library the real client uses.

Source addresses: the servers limit open connections per client address
(`http_max_conns_per_client`, 100), and a real fleet connects from as many addresses as it has
nodes. When the server is on loopback (Linux routes all of 127.0.0.0/8 there) the fleet spreads
its nodes over source addresses 127.0.0.2, 127.0.0.3, … with at most `nodes_per_address` (30)
nodes on each, each node with its poll and one connection for its short requests (at most 64
per address), so the default limit stays on in tests and benchmarks. Elsewhere every node
connects from the machine's own address."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import random
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
import structlog

from app.jobspec.durations import DurationError, duration_ns
from workers.client.api import WATCH_WAIT_S
from workers.client.drivers import fingerprint as driver_fingerprint
from workers.client.fleet_identity import identities, node_names

log = structlog.get_logger(__name__)
NANOS = 1_000_000_000
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
BACKOFF_BASE_S = 0.5
REGISTER_BACKOFF_CAP_S = 10.0
# A heartbeat retried later than a few seconds would eat into the servers' grace.
HEARTBEAT_BACKOFF_CAP_S = 4.0
WATCH_BACKOFF_CAP_S = 10.0
SHORT_CONNECTIONS_PER_ADDRESS = 4  # beyond one per node, for heartbeats, updates and fetches
ON_TIME_S = 1.0  # a heartbeat accepted within this long of falling due is on time
SUMMARY_EVERY_S = 30.0
Mode = Literal["realistic", "compact"]


class NodeGone(Exception):
    """The servers no longer know this node or its secret: register again."""


class Refused(Exception):
    """The servers refused the node's registration outright (a 4xx other than 408/429)."""


class Retryable(Exception):
    """The servers are busy or failing (429, 5xx): try again later."""

    def __init__(self, what: str, reply: httpx.Response) -> None:
        super().__init__(f"{what}: HTTP {reply.status_code}")
        self.status = reply.status_code


def backoff_delay(attempt: int, rng: random.Random, cap_s: float, base_s: float = BACKOFF_BASE_S) -> float:
    """Capped exponential backoff with jitter (half to all of the step), so nodes that failed
    together do not all come back together."""
    return float(min(cap_s, base_s * 2 ** min(attempt, 30)) * rng.uniform(0.5, 1.0))


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


@dataclass
class SimNode:
    id: uuid.UUID
    name: str
    secret: str
    ttl_s: float = 10.0
    slot: int = 0  # which HTTP client (source address) it uses
    registered: bool = False
    sync_after: float = 0.0  # monotonic time before which a failed status batch is not resent
    sync_failures: int = 0


@dataclass
class FleetStats:
    registered: int = 0
    heartbeats: int = 0
    on_time: int = 0
    late: int = 0
    failures: int = 0
    latencies_s: list[float] = field(default_factory=list)
    watches: int = 0
    started: int = 0  # allocations this fleet reported running (or failed at start)
    errors: Counter[str] = field(default_factory=Counter)

    def snapshot(self) -> dict[str, Any]:
        recent = sorted(self.latencies_s[-5000:])
        return {
            "heartbeat_p50_s": round(recent[len(recent) // 2], 4) if recent else None,
            "heartbeat_p99_s": round(recent[int(len(recent) * 0.99)], 4) if recent else None,
            "registered": self.registered,
            "heartbeats": self.heartbeats,
            "on_time": self.on_time,
            "late": self.late,
            "failures": self.failures,
            "watches": self.watches,
            "started": self.started,
            "errors": dict(self.errors),
        }


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


class Fleet:
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
        self.last: dict[str, dict[str, Any]] = {}  # alloc id -> the last update reported
        self.dirty: dict[uuid.UUID, dict[str, dict[str, Any]]] = defaultdict(dict)  # node -> alloc -> update
        self.jobs: dict[tuple[str, str, int], dict[str, Any]] = {}  # compact mode's job cache
        self.clients: list[httpx.AsyncClient] = []
        self.rng = random.Random()
        self._gate: asyncio.Semaphore | None = None
        self._beat_gate: asyncio.Semaphore | None = None
        self._logged: set[tuple[str, str]] = set()

    # -- HTTP ----------------------------------------------------------------------------

    def _client(self, address: str | None, nodes: int) -> httpx.AsyncClient:
        # Realistic: a poll per node plus, as a real client has, one more for its heartbeats and
        # updates, so a slow update never holds up another node's heartbeat; compact: the
        # concurrency the caller asked for.
        realistic = self.config.mode == "realistic"
        size = 2 * nodes + SHORT_CONNECTIONS_PER_ADDRESS if realistic else self.config.threads * 2 + 2
        transport = httpx.AsyncHTTPTransport(
            local_address=address, limits=httpx.Limits(max_connections=size, max_keepalive_connections=size)
        )
        timeout = httpx.Timeout(30.0, pool=60.0)
        return httpx.AsyncClient(base_url=self.base, transport=transport, timeout=timeout)

    def _open_clients(self) -> None:
        if self.clients:
            return  # a test may have put its own in
        per_slot = Counter(node.slot for node in self.nodes.values())
        self.clients = [self._client(address, per_slot[slot]) for slot, address in enumerate(self.addresses)]

    def _http(self, node: SimNode) -> httpx.AsyncClient:
        return self.clients[node.slot % len(self.clients)]

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

    # -- failures ------------------------------------------------------------------------

    def _failure(self, loop: str, node: SimNode | None, err: BaseException) -> None:
        """Count a failure; log the first of each kind with its context (a fleet of thousands
        failing together must not write thousands of lines)."""
        kind = f"{loop}:{type(err).__name__}"
        if isinstance(err, Retryable):
            kind = f"{loop}:HTTP {err.status}"
        elif isinstance(err, httpx.HTTPStatusError):
            kind = f"{loop}:HTTP {err.response.status_code}"
        with self.lock:
            self.stats.errors[kind] += 1
        if (loop, kind) in self._logged:
            return
        self._logged.add((loop, kind))
        expected = isinstance(err, httpx.HTTPError | Retryable | NodeGone)
        context = {"loop": loop, "node": node.name if node else None, "error": str(err) or type(err).__name__}
        if expected:
            log.warning("fleet request failed; backing off (further failures of this kind are counted)", **context)
        else:
            log.exception("unexpected error in a fleet loop; backing off and carrying on", **context)

    def _summary(self) -> None:
        with self.lock:
            snapshot = self.stats.snapshot()
        log.info("fleet", **snapshot)
        if self.config.stats_file is not None:
            path = self.config.stats_file
            try:
                path.with_suffix(".tmp").write_text(json.dumps(snapshot))
                path.with_suffix(".tmp").replace(path)
            except OSError as err:
                self._failure("stats", None, err)

    # -- registration --------------------------------------------------------------------

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

    async def register(self, node: SimNode) -> None:
        """Register until the servers accept; a busy or restarting server is waited out."""
        rng = random.Random(node.id.int)
        attempt = 0
        while True:
            try:
                async with self._gated():
                    reply = await self._http(node).put("/v1/node/register", json={"Node": self.node_body(node)})
                if reply.status_code in RETRYABLE_STATUSES:
                    raise Retryable("registration", reply)
                if 400 <= reply.status_code < 500:
                    raise Refused(f"node {node.name}: HTTP {reply.status_code}: {reply.text}")
                reply.raise_for_status()
                node.ttl_s = reply.json()["HeartbeatTTL"] / NANOS
                if not node.registered:
                    node.registered = True
                    with self.lock:
                        self.stats.registered += 1
                return
            except Refused:
                raise
            except Exception as err:
                self._failure("register", node, err)
            await asyncio.sleep(backoff_delay(attempt, rng, REGISTER_BACKOFF_CAP_S))
            attempt += 1

    async def register_all(self) -> None:
        await asyncio.gather(*(self.register(node) for node in self.nodes.values()))

    # -- heartbeats ----------------------------------------------------------------------

    async def _heartbeats(self, node: SimNode, first_wait: float) -> None:
        rng = random.Random(node.id.int ^ 1)
        attempt, wait = 0, first_wait
        due = time.monotonic() + wait
        while True:
            await asyncio.sleep(wait)
            try:
                node.ttl_s = await self._beat(node, due)
                attempt, wait = 0, node.ttl_s
                due = time.monotonic() + wait
            except NodeGone as err:
                self._failure("heartbeat", node, err)
                await self.register(node)
                self._resend(node)
                wait = 0.0
            except Refused:
                raise
            except Exception as err:
                self._failure("heartbeat", node, err)
                wait = backoff_delay(attempt, rng, HEARTBEAT_BACKOFF_CAP_S)
                attempt += 1

    async def _beat(self, node: SimNode, due: float) -> float:
        """One heartbeat (as `corral client` sends it); returns the TTL to wait."""
        began = time.monotonic()
        try:
            if self.config.mode == "compact":
                async with self._beat_gated():
                    reply = await self._put_heartbeat(node)
            else:
                reply = await self._put_heartbeat(node)
        except Exception:
            with self.lock:
                self.stats.failures += 1
            raise
        if reply.status_code in (403, 404):
            raise NodeGone(f"heartbeat: HTTP {reply.status_code}")
        if reply.status_code in RETRYABLE_STATUSES:
            with self.lock:
                self.stats.failures += 1
            raise Retryable("heartbeat", reply)
        reply.raise_for_status()
        body = reply.json()
        answered = time.monotonic()
        with self.lock:
            self.stats.heartbeats += 1
            self.stats.latencies_s.append(answered - began)
            if answered <= due + ON_TIME_S:
                self.stats.on_time += 1
            else:
                self.stats.late += 1
        if body.get("NodeStatus") == "initializing":
            self._resend(node)  # marked down meanwhile: re-send our allocations' state, then beat again
            return 1.0
        return float(body["HeartbeatTTL"]) / NANOS

    async def _put_heartbeat(self, node: SimNode) -> httpx.Response:
        return await self._http(node).put(
            f"/v1/node/{node.id}/heartbeat", json={"Status": "ready"}, headers={"X-Nomad-Token": node.secret}
        )

    # -- allocations: a blocking query per node (realistic) ------------------------------

    async def _watch_node(self, node: SimNode) -> None:
        rng = random.Random(node.id.int ^ 2)
        wait_s = self.config.watch_wait_s
        index, attempt = 0, 0
        while True:
            try:
                reply = await self._http(node).get(
                    f"/v1/node/{node.id}/allocations",
                    params={"index": index, "wait": f"{int(wait_s)}s"},
                    headers={"X-Nomad-Token": node.secret},
                    timeout=httpx.Timeout(wait_s + wait_s / 16 + 10, pool=60.0),
                )
                if reply.status_code == 404:
                    raise NodeGone("allocations: HTTP 404")
                if reply.status_code in RETRYABLE_STATUSES:
                    raise Retryable("allocations", reply)
                reply.raise_for_status()
                latest = int(reply.headers.get("X-Nomad-Index", "0"))
                allocs = list(reply.json())
                for alloc in allocs:
                    await self._consider(alloc, node)
                # Only once every allocation was handled: a failed fetch is retried at once.
                index = latest if latest >= index else 0
                attempt = 0
                with self.lock:
                    self.stats.watches += 1
            except Exception as err:
                self._failure("watch", node, err)
                await asyncio.sleep(backoff_delay(attempt, rng, WATCH_BACKOFF_CAP_S))
                attempt += 1

    # -- allocations: one cluster-wide blocking query (compact) --------------------------

    async def _watch_all(self) -> None:
        index, attempt = 0, 0
        client = self.clients[0]
        wait_s = self.config.watch_wait_s
        while True:
            try:
                reply = await client.get(
                    "/v1/allocations",
                    params={"index": index, "wait": f"{int(wait_s)}s", "namespace": "*"},
                    timeout=httpx.Timeout(wait_s + wait_s / 16 + 10, pool=60.0),
                )
                if reply.status_code in RETRYABLE_STATUSES:
                    raise Retryable("allocations", reply)
                reply.raise_for_status()
                latest = int(reply.headers.get("X-Nomad-Index", "0"))
                for alloc in reply.json():
                    node = self.nodes.get(uuid.UUID(alloc["NodeID"]))
                    if node is not None:
                        await self._consider(alloc, node)
                index = latest if latest >= index else 0
                attempt = 0
                with self.lock:
                    self.stats.watches += 1
            except Exception as err:
                self._failure("watch", None, err)
                await asyncio.sleep(backoff_delay(attempt, self.rng, WATCH_BACKOFF_CAP_S))
                attempt += 1

    # -- running allocations -------------------------------------------------------------

    async def _consider(self, alloc: dict[str, Any], node: SimNode) -> None:
        alloc_id = str(alloc["ID"])
        live = alloc["ClientStatus"] in ("pending", "running")
        wanted = alloc["DesiredStatus"] == "run" and alloc["ClientStatus"] != "lost"
        if not wanted:
            # Ours, or started on this node by the fleet's previous run (kept identities): a
            # restarted client stops what it restored, too.
            if live and self.last.get(alloc_id, {}).get("ClientStatus") not in ("complete", "failed"):
                self.known.setdefault(alloc_id, node.id)
                self._report(alloc_id, "complete", "stopped by the servers")
            return
        if alloc_id in self.known or not live:
            return
        # Pending: placed here. Running but unknown: the previous run of this fleet started it;
        # as a restarted `corral client` restores its allocations, take it back.
        config = await self._mock_config(alloc, node)
        if config is None or alloc_id in self.known:
            return  # gone meanwhile, or another watch took it
        self.known[alloc_id] = node.id
        with self.lock:
            self.stats.started += 1
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
        description = "Exit status" if final == "complete" else "Failed tasks"
        asyncio.get_running_loop().call_later(seconds, self._finish, alloc_id, final, description)

    def _finish(self, alloc_id: str, final: str, description: str) -> None:
        if self.last.get(alloc_id, {}).get("ClientStatus") == "running":
            self._report(alloc_id, final, description)

    async def _mock_config(self, alloc: dict[str, Any], node: SimNode) -> dict[str, Any] | None:
        """The first task's mock config: the full allocation (with its job), fetched as `corral
        client` does for each placement (compact mode caches it per job version)."""
        key = (str(alloc["Namespace"]), str(alloc["JobID"]), int(alloc["JobVersion"]))
        job = self.jobs.get(key) if self.config.mode == "compact" else None
        if job is None:
            reply = await self._http(node).get(f"/v1/allocation/{alloc['ID']}")
            if reply.status_code == 404:
                return None
            if reply.status_code in RETRYABLE_STATUSES:
                raise Retryable("allocation", reply)
            reply.raise_for_status()
            job = reply.json().get("Job") or {}
            if self.config.mode == "compact":
                self.jobs[key] = job
        groups: list[dict[str, Any]] = job.get("TaskGroups") or []
        group = next((g for g in groups if g.get("Name") == alloc["TaskGroup"]), {})
        tasks = group.get("Tasks") or [{}]
        return dict(tasks[0].get("Config") or {})

    def _report(self, alloc_id: str, status: str, description: str) -> None:
        node_id = self.known.get(alloc_id)
        if node_id is None:
            return
        state = "running" if status == "running" else "dead"
        update = {
            "ID": alloc_id,
            "ClientStatus": status,
            "ClientDescription": description,
            "TaskStates": {"t": {"State": state, "Failed": status == "failed", "Restarts": 0}},
        }
        self.last[alloc_id] = update
        self.dirty[node_id][alloc_id] = update

    def _resend(self, node: SimNode) -> None:
        for alloc_id, node_id in self.known.items():
            if node_id == node.id and alloc_id in self.last:
                self.dirty[node.id].setdefault(alloc_id, self.last[alloc_id])

    # -- status sync: per-node batches ---------------------------------------------------

    async def _sync(self) -> None:
        while True:
            await asyncio.sleep(self.config.sync_interval_s)
            now = time.monotonic()
            batches = {}
            for node_id in list(self.dirty):
                if self.nodes[node_id].sync_after <= now:
                    batches[node_id] = self.dirty.pop(node_id)
            if batches:
                await asyncio.gather(*(self._send(node_id, updates) for node_id, updates in batches.items()))

    async def _send(self, node_id: uuid.UUID, updates: dict[str, dict[str, Any]]) -> None:
        node = self.nodes[node_id]
        try:
            async with self._gated() if self.config.mode == "compact" else _nothing():
                reply = await self._http(node).put(
                    f"/v1/node/{node_id}/allocations",
                    json={"Allocs": list(updates.values())},
                    headers={"X-Nomad-Token": node.secret},
                )
            if reply.status_code in RETRYABLE_STATUSES:
                raise Retryable("allocation updates", reply)
            reply.raise_for_status()
            node.sync_failures = 0
        except Exception as err:
            self._failure("sync", node, err)
            node.sync_after = time.monotonic() + backoff_delay(node.sync_failures, self.rng, WATCH_BACKOFF_CAP_S)
            node.sync_failures += 1
            for alloc_id, update in updates.items():
                self.dirty[node_id].setdefault(alloc_id, update)

    # -- run -----------------------------------------------------------------------------

    async def _node(self, node: SimNode) -> None:
        """A realistic node: register, then heartbeat and watch its own allocations."""
        await self.register(node)
        await asyncio.gather(self._heartbeats(node, 0.0), self._watch_node(node))

    async def _compact_node(self, node: SimNode, spread: float) -> None:
        """A compact-mode node: register, then heartbeat (its allocations are watched for it)."""
        await self.register(node)
        await self._heartbeats(node, spread * node.ttl_s)

    async def _summaries(self) -> None:
        while True:
            await asyncio.sleep(SUMMARY_EVERY_S if self.config.stats_file is None else 2.0)
            self._summary()

    async def _stopped(self) -> None:
        while not self.stop.is_set():
            await asyncio.sleep(0.1)

    async def main(self) -> None:
        self._open_clients()
        background = [
            asyncio.ensure_future(_guard("sync", self._sync, self._failure)),
            asyncio.ensure_future(self._summaries()),
        ]
        work: list[asyncio.Future[Any]] = []
        try:
            if self.config.mode == "realistic":
                work = [asyncio.ensure_future(self._node(node)) for node in self.nodes.values()]
            else:
                work = [asyncio.ensure_future(_guard("watch", self._watch_all, self._failure))]
                count = max(1, len(self.nodes))
                for i, node in enumerate(self.nodes.values()):
                    # First beats spread over the first TTL, as a fleet that registered over time.
                    spread = (i % 1000) / min(count, 1000)
                    work.append(asyncio.ensure_future(self._compact_node(node, spread)))
            stopped = asyncio.ensure_future(self._stopped())
            done, _ = await asyncio.wait([stopped, *work], return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                if finished is not stopped and (error := finished.exception()) is not None:
                    raise error
        finally:
            for task in [*work, *background]:
                task.cancel()
            await asyncio.gather(*work, *background, return_exceptions=True)
            self._summary()
            for client in self.clients:
                await client.aclose()

    def run(self) -> None:
        asyncio.run(self.main())


async def _guard(name: str, loop: Callable[[], Awaitable[None]], failed: Callable[..., None]) -> None:
    """Run a fleet-wide loop forever: an unexpected exception is reported and the loop restarts."""
    while True:
        try:
            await loop()
        except Exception as err:
            failed(name, None, err)
            await asyncio.sleep(1.0)


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


def run_fleet(config: FleetConfig, stop: threading.Event) -> Fleet:
    fleet = Fleet(config, stop)
    fleet.run()
    return fleet
