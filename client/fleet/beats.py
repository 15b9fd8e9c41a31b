"""The realistic fleet's heartbeat lane: a thread with an event loop and HTTP clients of its own
that sends every node's heartbeats.

A real node's heartbeat does not wait for other nodes' work. In one event loop it did: when a
job of count N reached the fleet, N watch answers (each with its whole job) and N status
updates queued ahead of every heartbeat, and beats went out tens of seconds late while the
servers were half idle, so the servers marked live nodes down. In a loop of its own, a beat
waits only for the interpreter's lock, which Python hands over every few milliseconds."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import uuid
from collections.abc import Callable, Coroutine
from typing import TypeVar

import httpx

T = TypeVar("T")
STOP_TIMEOUT_S = 10.0


class HeartbeatLane:
    def __init__(self, open_client: Callable[[uuid.UUID], httpx.AsyncClient]) -> None:
        self.loop = asyncio.new_event_loop()
        self._open_client = open_client
        self._clients: dict[uuid.UUID, httpx.AsyncClient] = {}
        self._thread = threading.Thread(target=self._run, name="fleet-heartbeats", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def here(self) -> bool:
        """Whether the caller runs in this lane's loop."""
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def client(self, node_id: uuid.UUID) -> httpx.AsyncClient:
        """The node's heartbeat client (made in, and only used from, this lane's loop)."""
        found = self._clients.get(node_id)
        if found is None:
            found = self._clients[node_id] = self._open_client(node_id)
        return found

    def submit(self, work: Coroutine[object, None, T]) -> concurrent.futures.Future[T]:
        """Run `work` in this lane; cancelling the future cancels it."""
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def stop(self) -> None:
        """Cancel what still runs here, close the clients, and end the thread."""
        if not self._thread.is_alive():
            return
        done = asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)
        with contextlib.suppress(concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            done.result(STOP_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self.loop.close()

    async def _shutdown(self) -> None:
        current = asyncio.current_task()
        others = [task for task in asyncio.all_tasks() if task is not current]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
