"""The simulated fleet's nodes towards the servers: registration (until accepted) and
heartbeats at the TTL the servers answer, as `corral client` sends them."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from client.drivers import Mock
from client.drivers import fingerprint as driver_fingerprint
from client.fleet.allocs import FleetAllocs
from client.fleet.base import NANOS, SimNode
from client.fleet.retry import (
    HEARTBEAT_BACKOFF_CAP_S,
    REGISTER_BACKOFF_CAP_S,
    RETRYABLE_STATUSES,
    NodeGone,
    Refused,
    Retryable,
    backoff_delay,
)
from client.fleet.stats import ON_TIME_S


class FleetNodes(FleetAllocs):
    # -- registration --------------------------------------------------------------------

    def node_body(self, node: SimNode) -> dict[str, Any]:
        return {
            "ID": str(node.id),
            "SecretID": node.secret,
            "Name": node.name,
            "Datacenter": self.config.datacenter,
            "Status": "ready",
            "Attributes": {"kernel.name": "linux", "unique.hostname": node.name, "driver.mock": "1"},
            "Drivers": driver_fingerprint({"mock": Mock()}),
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
                        count = self.stats.registered
                    self.stats.gc.registered(count, len(self.nodes))
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
                await self._on_main(self.register(node))
                self._call_on_main(self._resend, node)
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
        self._count_beat(began, due)
        if body.get("NodeStatus") == "initializing":
            # Marked down meanwhile: re-send our allocations' state, then beat again.
            self._call_on_main(self._resend, node)
            return 1.0
        return float(body["HeartbeatTTL"]) / NANOS

    def _count_beat(self, began: float, due: float) -> None:
        """An accepted heartbeat: its latency, and whether it came in time (and if not, whose
        wait was longer: the fleet's before sending, or the round trip's)."""
        answered = time.monotonic()
        round_trip, send_delay = answered - began, max(0.0, began - due)
        with self.lock:
            self.stats.heartbeats += 1
            self.stats.latencies_s.append(round_trip)
            self.stats.send_delays_s.append(send_delay)
            if answered <= due + ON_TIME_S:
                self.stats.on_time += 1
            else:
                self.stats.late += 1
                if send_delay > round_trip:
                    self.stats.late_sent += 1

    async def _put_heartbeat(self, node: SimNode) -> httpx.Response:
        return await self._http(node).put(
            f"/v1/node/{node.id}/heartbeat", json={"Status": "ready"}, headers={"X-Nomad-Token": node.secret}
        )
