"""A simulated fleet (like Nomad's nodesim): one process registers and heartbeats thousands of
`mock` nodes, runs their allocations on timers (no thread per task) and reports status in
per-node batches, through the same REST protocol as `corral client`. For tests and benchmarks.

Two modes:

- `realistic` (the default, and what benchmarks use): every node talks to the servers as a
  `corral client` does. It registers, heartbeats at the TTL the servers answer, and holds its own
  blocking query for its allocations, fetches each allocation placed on it, and reports its
  status. So N nodes hold N long polls, as a real fleet of N clients does.
- `compact`: one cluster-wide blocking query on `/v1/allocations` finds every node's
  allocations; heartbeats are the same. Much cheaper for the servers than a real fleet.

The pieces, one module each: fleet_base (configuration, nodes, shared state), fleet_nodes
(registration, heartbeats), fleet_watch (the blocking queries), fleet_allocs (running
allocations, status batches), fleet_retry (backoff), fleet_http (clients and source addresses),
fleet_stats (counters, the stats file), fleet_identity (node IDs kept across restarts). This one
runs them.

Every loop survives any unexpected exception: it is logged once per kind with its context,
counted, backed off, and the loop carries on. Only a registration the servers refuse outright
ends the fleet.

Why asyncio with httpx.AsyncClient rather than threads or gevent: thousands of concurrent long
polls must not cost a thread each (a 5,000-thread process spends its time switching and its
memory on stacks), and gevent would monkey-patch the whole process, which the benchmarks that
run a Fleet inside their own process must not inherit. asyncio keeps each node a few coroutines
and one socket per poll, and httpx is the HTTP library the real client uses. A realistic fleet's
heartbeats run in a thread and loop of their own (fleet_beats), so no node's beat waits behind
other nodes' allocation work, as no real node's does."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from client.fleet.base import FleetConfig, SimNode
from client.fleet.nodes import FleetNodes
from client.fleet.stats import STATS_FILE_EVERY_S, SUMMARY_EVERY_S
from client.fleet.watch import FleetWatches


class Fleet(FleetNodes, FleetWatches):
    async def _node(self, node: SimNode) -> None:
        """A realistic node: register, then heartbeat and watch its own allocations."""
        await self.register(node)
        beats = self._heartbeats(node, 0.0)
        lane = asyncio.wrap_future(self.lane.submit(beats)) if self.lane is not None else beats
        await asyncio.gather(lane, self._watch_node(node))

    async def _compact_node(self, node: SimNode, spread: float) -> None:
        """A compact-mode node: register, then heartbeat (its allocations are watched for it)."""
        await self.register(node)
        await self._heartbeats(node, spread * node.ttl_s)

    async def _summaries(self) -> None:
        while True:
            await asyncio.sleep(SUMMARY_EVERY_S if self.config.stats_file is None else STATS_FILE_EVERY_S)
            self._summary()
            self.stats.gc.collect_when_due()

    async def _stopped(self) -> None:
        while not self.stop.is_set():
            await asyncio.sleep(0.1)

    def _start_nodes(self) -> list[asyncio.Future[Any]]:
        """Each node's loops (and, in compact mode, the one cluster-wide watch)."""
        if self.config.mode == "realistic":
            return [asyncio.ensure_future(self._node(node)) for node in self.nodes.values()]
        work: list[asyncio.Future[Any]] = [asyncio.ensure_future(_guard("watch", self._watch_all, self._failure))]
        count = max(1, len(self.nodes))
        for i, node in enumerate(self.nodes.values()):
            # First beats spread over the first TTL, as a fleet that registered over time.
            spread = (i % 1000) / min(count, 1000)
            work.append(asyncio.ensure_future(self._compact_node(node, spread)))
        return work

    async def main(self) -> None:
        self.main_loop = asyncio.get_running_loop()
        self.stats.gc.install()
        self._open_clients()
        background = [
            asyncio.ensure_future(_guard("sync", self._sync, self._failure)),
            asyncio.ensure_future(self._summaries()),
        ]
        work: list[asyncio.Future[Any]] = []
        try:
            work = self._start_nodes()
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
            if self.lane is not None:
                self.lane.stop()
            self.stats.gc.remove()

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


def run_fleet(config: FleetConfig, stop: threading.Event) -> Fleet:
    fleet = Fleet(config, stop)
    fleet.run()
    return fleet
