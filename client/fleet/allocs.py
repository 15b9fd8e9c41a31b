"""The simulated fleet's allocations: it runs each placed allocation as the mock driver would
(`run_for`, `exit_code` and `start_error` are honoured; restart policies are not), on timers
rather than a thread per task, and reports their status to the servers in per-node batches."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from typing import Any, cast

from app.jobspec.durations import DurationError, duration_ns
from app.wire.allocation import TaskStateJson
from app.wire.api.api_nodes import AllocUpdateJson
from client.fleet.base import NANOS, FleetBase, SimNode, Updates
from client.fleet.retry import RETRYABLE_STATUSES, WATCH_BACKOFF_CAP_S, Retryable, backoff_delay
from client.tasks import task_state


class FleetAllocs(FleetBase):
    # -- running allocations -------------------------------------------------------------

    async def _consider(self, alloc: dict[str, Any], node: SimNode) -> None:
        alloc_id = str(alloc["ID"])
        live = alloc["ClientStatus"] in ("pending", "running")
        wanted = alloc["DesiredStatus"] == "run" and alloc["ClientStatus"] != "lost"
        if not wanted:
            # Ours, or started on this node by the fleet's previous run (kept identities): a
            # restarted client stops what it restored, too.
            if live and self._last_status(alloc_id) not in ("complete", "failed"):
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
        if self._last_status(alloc_id) == "running":
            self._report(alloc_id, final, description)

    async def _mock_config(self, alloc: dict[str, Any], node: SimNode) -> dict[str, Any] | None:
        """The first task's mock config. A node's own watch answers in the client's shape
        (?client_since): the whole allocation comes with it when the servers changed it, else it
        is fetched, as `corral client` does. The cluster-wide watch lists stubs: the full
        allocation (with its job) is fetched, cached per job version."""
        client_shape = "Allocation" in alloc
        if client_shape and alloc["Allocation"] is not None:
            alloc = alloc["Allocation"]
        key = None if client_shape else (str(alloc["Namespace"]), str(alloc["JobID"]), int(alloc["JobVersion"]))
        cached = key is not None and self.config.mode == "compact"
        job = alloc.get("Job") if key is None else self.jobs.get(key) if cached else None
        if job is None:
            reply = await self._http(node).get(f"/v1/allocation/{alloc['ID']}")
            if reply.status_code == 404:
                return None
            if reply.status_code in RETRYABLE_STATUSES:
                raise Retryable("allocation", reply)
            reply.raise_for_status()
            alloc = reply.json()
            job = alloc.get("Job") or {}
            if self.config.mode == "compact" and key is not None:
                self.jobs[key] = job
        groups: list[dict[str, Any]] = job.get("TaskGroups") or []
        group = next((g for g in groups if g.get("Name") == alloc["TaskGroup"]), {})
        tasks = group.get("Tasks") or [{}]
        return dict(tasks[0].get("Config") or {})

    def _report(self, alloc_id: str, status: str, description: str) -> None:
        node_id = self.known.get(alloc_id)
        if node_id is None:
            return
        update: AllocUpdateJson = {
            "ID": alloc_id,
            "ClientStatus": status,
            "ClientDescription": description,
            "TaskStates": {"t": self._task_state(alloc_id, status)},
        }
        self.last[alloc_id] = update
        self.dirty[node_id][alloc_id] = update

    def _last_status(self, alloc_id: str) -> str | None:
        last = self.last.get(alloc_id)
        return None if last is None else last["ClientStatus"]

    def _task_state(self, alloc_id: str, status: str) -> TaskStateJson:
        """Nomad's TaskState of the simulated task: started when first running, finished when
        it ends (RFC 3339 times, as a real client reports them)."""
        last = self.last.get(alloc_id)
        before = last["TaskStates"].get("t") if last is not None else None
        state = before.copy() if before is not None else cast(TaskStateJson, task_state.new_state())
        now = task_state.now()
        if status == "running":
            state["State"] = "running"
            if state["StartedAt"] == task_state.ZERO_TIME:
                state["StartedAt"] = now
            return state
        state["State"], state["Failed"], state["FinishedAt"] = "dead", status == "failed", now
        return state

    def _resend(self, node: SimNode) -> None:
        for alloc_id, node_id in self.known.items():
            if node_id == node.id and alloc_id in self.last:
                self.dirty[node.id].setdefault(alloc_id, self.last[alloc_id])

    # -- status sync: per-node batches ---------------------------------------------------

    async def _sync(self) -> None:
        """Every sync interval, each node with changes sends them in one batch, unless its
        previous batch is still in flight or backing off: nodes sync independently, as real
        clients do, so one slow or failing batch never holds back another node's."""
        in_flight = InFlight()
        try:
            while True:
                await asyncio.sleep(self.config.sync_interval_s)
                for node_id, updates in self._due_batches(set(in_flight.batches), time.monotonic()).items():
                    in_flight.add(node_id, asyncio.ensure_future(self._send(node_id, updates)))
        finally:
            await in_flight.cancel()

    def _due_batches(self, in_flight: set[uuid.UUID], now: float) -> dict[uuid.UUID, Updates]:
        """Take the pending updates of every node that may send now."""
        due = [n for n in self.dirty if n not in in_flight and self.nodes[n].sync_after <= now]
        return {node_id: self.dirty.pop(node_id) for node_id in due}

    async def _send(self, node_id: uuid.UUID, updates: Updates) -> None:
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


class InFlight:
    """Each node's status batch in flight. A task's repr lists its done callbacks with their
    arguments, so the callback holds this small object, never the dict of every node's batch:
    asyncio and anyio format a task's repr when they cancel it, and with the dict in there each
    repr walked thousands of tasks (a 5,000-node fleet's loop stalled for minutes on one)."""

    def __init__(self) -> None:
        self.batches: dict[uuid.UUID, asyncio.Future[None]] = {}

    def add(self, node_id: uuid.UUID, batch: asyncio.Future[None]) -> None:
        self.batches[node_id] = batch
        batch.add_done_callback(functools.partial(self._done, node_id))

    def _done(self, node_id: uuid.UUID, _: object) -> None:
        self.batches.pop(node_id, None)

    async def cancel(self) -> None:
        pending = list(self.batches.values())
        for batch in pending:
            batch.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def __repr__(self) -> str:
        return f"<{len(self.batches)} status batches in flight>"


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None
