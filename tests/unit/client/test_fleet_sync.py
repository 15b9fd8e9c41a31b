"""A realistic fleet's nodes report allocation status independently (client/fleet/allocs.py):
a node whose batch hangs holds back no other node's, each node has one batch in flight at most
(later changes wait for it, as a real client's do), and stopping the fleet cancels what is in
flight."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from app.wire.api.api_nodes import AllocUpdateJson
from client.fleet import base
from client.fleet.allocs import InFlight
from client.fleet.fleet import Fleet

pytestmark = pytest.mark.unit


def update(alloc_id: str) -> AllocUpdateJson:
    return {"ID": alloc_id, "ClientStatus": "running", "ClientDescription": "", "TaskStates": {}}


async def settle() -> None:
    await asyncio.sleep(0.1)  # several sync intervals of 10 ms


def test_a_hanging_batch_holds_back_no_other_node(monkeypatch: pytest.MonkeyPatch) -> None:
    config = base.FleetConfig(server="http://10.0.0.1:4646", nodes=2, nodes_per_address=0, sync_interval_s=0.01)
    fleet = Fleet(config, threading.Event())
    slow, fast = list(fleet.nodes)
    sent: list[tuple[uuid.UUID, list[str]]] = []
    hung: list[asyncio.Future[None]] = []

    async def send(node_id: uuid.UUID, updates: base.Updates) -> None:
        sent.append((node_id, sorted(updates)))
        if node_id == slow:
            hung.append(asyncio.get_running_loop().create_future())
            await hung[-1]  # answered only when the test says so

    monkeypatch.setattr(fleet, "_send", send)

    async def scenario() -> None:
        fleet.dirty[slow]["a1"], fleet.dirty[fast]["b1"] = update("a1"), update("b1")
        syncing = asyncio.ensure_future(fleet._sync())
        await settle()
        assert sent == [(slow, ["a1"]), (fast, ["b1"])]

        fleet.dirty[slow]["a2"], fleet.dirty[fast]["b2"] = update("a2"), update("b2")
        await settle()
        assert (fast, ["b2"]) in sent, "the fast node waited for the slow node's batch"
        assert (slow, ["a2"]) not in sent, "a node sent a second batch while its first was in flight"
        assert dict(fleet.dirty) == {slow: {"a2": update("a2")}}

        hung[0].set_result(None)
        await settle()
        assert sent[-1] == (slow, ["a2"])

        syncing.cancel()  # the fleet stops while the slow node's second batch still hangs
        await asyncio.gather(syncing, return_exceptions=True)
        assert hung[1].cancelled()

    asyncio.run(scenario())


def test_a_batch_tasks_repr_stays_short_however_many_are_in_flight() -> None:
    """asyncio and anyio format a task's repr when they cancel it; a callback that carried every
    node's batch made each repr walk them all (the loop of a 5,000-node fleet stalled on it)."""

    async def scenario() -> None:
        in_flight = InFlight()
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def hang() -> None:
            await never

        for _ in range(2000):
            in_flight.add(uuid.uuid4(), asyncio.ensure_future(hang()))
        await asyncio.sleep(0)
        one = next(iter(in_flight.batches.values()))
        assert len(repr(one)) < 1000
        await in_flight.cancel()
        assert not in_flight.batches

    asyncio.run(scenario())
