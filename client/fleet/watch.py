"""How the simulated fleet learns what is placed on its nodes: a blocking query on the servers.

- realistic: every node holds its own, on `GET /v1/node/<id>/allocations?index=…&wait=30s
  &client_since=…` (its SecretID in X-Nomad-Token), as a `corral client` does (client/api.py):
  the answer lists the node's allocations in the client's shape, each changed one whole, so a
  placement costs no second request; N nodes hold N long polls.
- compact: one cluster-wide query on `/v1/allocations` finds every node's allocations."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from client.fleet.allocs import FleetAllocs
from client.fleet.base import SimNode
from client.fleet.retry import RETRYABLE_STATUSES, WATCH_BACKOFF_CAP_S, NodeGone, Retryable, backoff_delay


@dataclass(frozen=True)
class WatchQuery:
    path: str
    params: dict[str, str] = field(default_factory=dict)  # beyond index and wait
    headers: dict[str, str] = field(default_factory=dict)
    node: SimNode | None = None  # the node whose own query this is (a 404 means it is gone)
    # corral's client protocol: ?client_since=<index> (the previous answer's), as the real client
    client_since: bool = False


class FleetWatches(FleetAllocs):
    async def _watch_node(self, node: SimNode) -> None:
        """Realistic mode: this node's own blocking query."""
        query = WatchQuery(
            f"/v1/node/{node.id}/allocations", headers={"X-Nomad-Token": node.secret}, node=node, client_since=True
        )
        await self._watch(self._http(node), query, lambda alloc: node, random.Random(node.id.int ^ 2))

    async def _watch_all(self) -> None:
        """Compact mode: one query for every node's allocations."""
        query = WatchQuery("/v1/allocations", params={"namespace": "*"})
        await self._watch(self.clients[0], query, self._owner, self.rng)

    def _owner(self, alloc: dict[str, Any]) -> SimNode | None:
        return self.nodes.get(uuid.UUID(alloc["NodeID"]))

    async def _watch(
        self,
        client: httpx.AsyncClient,
        query: WatchQuery,
        owner: Callable[[dict[str, Any]], SimNode | None],
        rng: random.Random,
    ) -> None:
        """Hold the blocking query forever, handing each allocation to its node's runner."""
        wait_s = self.config.watch_wait_s
        index, attempt = 0, 0
        while True:
            try:
                since = {"client_since": index} if query.client_since else {}
                reply = await client.get(
                    query.path,
                    params={"index": index, "wait": f"{int(wait_s)}s", **since, **query.params},
                    headers=query.headers,
                    timeout=httpx.Timeout(wait_s + wait_s / 16 + 10, pool=60.0),
                )
                if query.node is not None and reply.status_code == 404:
                    raise NodeGone("allocations: HTTP 404")
                if reply.status_code in RETRYABLE_STATUSES:
                    raise Retryable("allocations", reply)
                reply.raise_for_status()
                latest = int(reply.headers.get("X-Nomad-Index", "0"))
                for alloc in reply.json():
                    node = owner(alloc)
                    if node is not None:
                        await self._consider(alloc, node)
                # Only once every allocation was handled: a failed fetch is retried at once.
                index = latest if latest >= index else 0
                attempt = 0
                with self.lock:
                    self.stats.watches += 1
            except Exception as err:
                self._failure("watch", query.node, err)
                await asyncio.sleep(backoff_delay(attempt, rng, WATCH_BACKOFF_CAP_S))
                attempt += 1
