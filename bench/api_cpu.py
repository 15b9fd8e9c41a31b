"""The API's CPU per client request: what a simulated fleet costs the servers per heartbeat and per
wake of a node's blocking allocation watch, read from the `corral server` processes' CPU time
(master and gunicorn workers, /proc), so the figure holds on a loaded machine where wall time
does not. Next to them, the same server's floor: an unknown path (404: the whole HTTP stack,
routing and the error hooks; no database read, as such an answer carries no X-Nomad-Index).

- heartbeat: `PUT /v1/node/<id>/heartbeat` as `corral client` and the fleet send it (the node's
  SecretID in X-Nomad-Token), round-robin over the registered nodes;
- watch wake: every node holds `GET /v1/node/<id>/allocations?index=I&wait=60s` (with
  `client_since=0` too, the shape corral's client sends); this process then changes every
  node's row in one transaction (a new state index, as a node update takes), which wakes each
  watch once: the figure is the server's CPU for that round (the index watcher's look, each
  wake, re-read and answer, and the next request parked) divided by the wakes.

Usage: uv run python -m bench.api_cpu [--nodes 1000] [--beats 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import psycopg

from app.db.engines import libpq_url
from app.store.sql import psycopg_query
from bench.common import bench_database
from client.fleet.http import async_client, source_addresses

CORRAL = str(Path(sys.executable).parent / "corral")
NODES_PER_ADDRESS = 30  # as the fleet spreads its nodes (the server limits connections per address)
WAIT_S = 60


@dataclass(frozen=True)
class Node:
    id: uuid.UUID
    secret: str
    client: httpx.AsyncClient


@contextmanager
def api_server(url: str) -> Iterator[tuple[str, psutil.Process]]:
    port = 4400 + os.getpid() % 500
    env = {
        **os.environ,
        "CORRAL_DATABASE_URL": url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_LOG_LEVEL": "warning",
        "CORRAL_HTTP_ACCESS_LOG": "false",
        # No node may be marked down while the bench holds its heartbeats back (none runs a
        # leader, but the TTL granted should not shrink to nothing either).
        "CORRAL_HEARTBEAT_MIN_TTL_S": "600",
    }
    server = subprocess.Popen([CORRAL, "server"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/agent/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        print(f"corral server pid {server.pid} at {base}", file=sys.stderr, flush=True)
        yield base, psutil.Process(server.pid)
    finally:
        server.terminate()
        server.wait(30)


def server_cpu(root: psutil.Process) -> float:
    """User + system seconds of the server's master and its live workers."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


async def measured(root: psutil.Process, count: int, work: Callable[[], Awaitable[None]]) -> float:
    """CPU ms of the server per unit of `work`, which does `count` units."""
    before = server_cpu(root)
    await work()
    return (server_cpu(root) - before) * 1000 / count


def node_body(node_id: uuid.UUID, secret: str) -> dict[str, object]:
    name = f"cpu-{node_id.hex[:8]}"
    return {
        "ID": str(node_id),
        "SecretID": secret,
        "Name": name,
        "Datacenter": "dc1",
        "Status": "ready",
        "Attributes": {"kernel.name": "linux", "unique.hostname": name},
        "NodeResources": {"Cpu": {"CpuShares": 4000}, "Memory": {"MemoryMB": 8192}, "Disk": {"DiskMB": 100_000}},
    }


async def in_parallel(jobs: Sequence[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    queue = list(reversed(jobs))

    async def runner() -> None:
        while queue:
            await queue.pop()()

    await asyncio.gather(*(runner() for _ in range(concurrency)))


async def register(nodes: list[Node]) -> None:
    async def one(node: Node) -> None:
        reply = await node.client.put("/v1/node/register", json={"Node": node_body(node.id, node.secret)})
        reply.raise_for_status()

    await in_parallel([functools.partial(one, node) for node in nodes], 16)


async def heartbeats(nodes: list[Node], count: int, concurrency: int) -> None:
    async def one(node: Node) -> None:
        reply = await node.client.put(
            f"/v1/node/{node.id}/heartbeat", json={"Status": "ready"}, headers={"X-Nomad-Token": node.secret}
        )
        reply.raise_for_status()

    jobs = [functools.partial(one, nodes[i % len(nodes)]) for i in range(count)]
    await in_parallel(jobs, concurrency)


async def unknown_paths(client: httpx.AsyncClient, count: int, concurrency: int) -> None:
    async def one() -> None:
        reply = await client.get("/v1/no-such-route")
        assert reply.status_code == 404

    await in_parallel([one for _ in range(count)], concurrency)


class Watches:
    """Every node's blocking query, re-issued as soon as it answers, counting the answers."""

    def __init__(self, nodes: list[Node], client_since: bool) -> None:
        self.nodes = nodes
        self.client_since = client_since
        self.answers = 0
        self.busy = 0
        self.changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def hold(self, node: Node) -> None:
        index = 0
        extra = {"client_since": "0"} if self.client_since else {}
        while True:
            reply = await node.client.get(
                f"/v1/node/{node.id}/allocations",
                params={"index": str(index), "wait": f"{WAIT_S}s", **extra},
                headers={"X-Nomad-Token": node.secret},
                timeout=httpx.Timeout(WAIT_S * 2, pool=60.0),
            )
            if reply.status_code == 503:  # busy: the fleet backs off and asks again, so does this
                self.busy += 1
                if self.busy == 1:
                    print(f"watch: HTTP 503: {reply.text.strip()}", file=sys.stderr)
                await asyncio.sleep(1.0)
                continue
            reply.raise_for_status()
            index = int(reply.headers["X-Nomad-Index"])
            self.answers += 1
            self.changed.set()

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self.hold(node)) for node in self.nodes]

    async def until(self, answers: int) -> None:
        while self.answers < answers:
            for task in self.tasks:
                if task.done():
                    task.result()  # a failed watch fails the bench
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), timeout=120)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def touch_nodes(url: str, nodes: list[Node]) -> None:
    """One transaction changing every node's row at a new state index, as a node update does."""
    with psycopg.connect(libpq_url(url)) as conn, conn.transaction():
        row = conn.execute(psycopg_query("take_index"), {"tables": ["nodes"], "notify": True}).fetchone()
        assert row is not None
        conn.execute("UPDATE nodes SET modify_index = %s WHERE id = ANY(%s)", (row[0], [n.id for n in nodes]))


async def watch_wakes(url: str, nodes: list[Node], rounds: int, client_since: bool, root: psutil.Process) -> float:
    watches = Watches(nodes, client_since)
    watches.start()
    try:
        await watches.until(len(nodes))  # every first answer (index 0) is in: all now park
        await asyncio.sleep(1.0)  # the index watcher tracks nodes from its next look
        touch_nodes(url, nodes)  # a warm-up round
        await watches.until(2 * len(nodes))
        await asyncio.sleep(0.5)
        before, answers = server_cpu(root), watches.answers
        for _ in range(rounds):
            target = watches.answers + len(nodes)
            await asyncio.to_thread(touch_nodes, url, nodes)
            await watches.until(target)
            await asyncio.sleep(0.3)  # every re-issued query parked again
        return (server_cpu(root) - before) * 1000 / (watches.answers - answers)
    finally:
        await watches.stop()


async def run(url: str, base: str, root: psutil.Process, args: argparse.Namespace) -> None:
    addresses = source_addresses(base, args.nodes, NODES_PER_ADDRESS)
    clients = [async_client(base, address, 2 * NODES_PER_ADDRESS + 4) for address in addresses]
    try:
        nodes = [
            Node(uuid.uuid4(), str(uuid.uuid4()), clients[i // NODES_PER_ADDRESS % len(clients)])
            for i in range(args.nodes)
        ]
        await register(nodes)
        await heartbeats(nodes, min(len(nodes), 2000), args.concurrency)  # warm-up: every worker, every path
        await unknown_paths(clients[0], 500, args.concurrency)
        floor = await measured(root, args.beats, lambda: unknown_paths(clients[0], args.beats, args.concurrency))
        beat = await measured(root, args.beats, lambda: heartbeats(nodes, args.beats, args.concurrency))
        nomad_wake = await watch_wakes(url, nodes, args.rounds, False, root)
        client_wake = await watch_wakes(url, nodes, args.rounds, True, root)
    finally:
        for client in clients:
            await client.aclose()
    print(f"nodes={args.nodes} heartbeats={args.beats} concurrency={args.concurrency} rounds={args.rounds}")
    print(f"server CPU per unknown path (404, the floor): {floor:6.3f} ms")
    for name, value in (
        ("heartbeat", beat),
        ("watch wake (Nomad's shape)", nomad_wake),
        ("watch wake (?client_since)", client_wake),
    ):
        print(f"server CPU per {name + ':':31} {value:6.3f} ms  ({value / floor:.2f}x the floor)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--beats", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with bench_database() as url, api_server(url) as (base, root):
        asyncio.run(run(url, base, root, args))


if __name__ == "__main__":
    main()
