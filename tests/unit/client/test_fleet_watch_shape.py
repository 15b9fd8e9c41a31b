"""The simulated fleet's nodes watch their allocations as `corral client` does
(?client_since=<previous index>, the answer in the client's shape): a placement that comes whole
runs without a second request, one that comes without its allocation is fetched."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import httpx
import pytest

from client.fleet.base import FleetConfig
from client.fleet.fleet import Fleet

pytestmark = pytest.mark.unit

JOB = {"TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Config": {"run_for": "1h"}}]}]}


def _entry(alloc_id: str, whole: bool) -> dict[str, Any]:
    allocation = {"ID": alloc_id, "TaskGroup": "g", "Namespace": "default", "JobID": "j", "JobVersion": 0, "Job": JOB}
    return {
        "ID": alloc_id,
        "AllocModifyIndex": 5,
        "DesiredStatus": "run",
        "ClientStatus": "pending",
        "DeploymentID": None,
        "DesiredTransition": {},
        "Allocation": allocation if whole else None,
    }


def test_a_node_watches_with_client_since_and_fetches_only_what_came_without_its_allocation() -> None:
    whole, bare = str(uuid.uuid4()), str(uuid.uuid4())
    watches: list[httpx.QueryParams] = []
    fetched: list[str] = []
    done = asyncio.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/allocations"):
            watches.append(request.url.params)
            if len(watches) == 1:
                listed = [_entry(whole, True), _entry(bare, False)]
                return httpx.Response(200, json=listed, headers={"X-Nomad-Index": "7"})
            done.set()
            await asyncio.sleep(3600)  # the second watch blocks, as a real one does
        fetched.append(request.url.path)
        return httpx.Response(200, json=_entry(bare, True)["Allocation"])

    fleet = Fleet(FleetConfig(server="http://corral.test", nodes=1, nodes_per_address=0), threading.Event())
    fleet.clients = [httpx.AsyncClient(base_url="http://corral.test", transport=httpx.MockTransport(answer))]
    node = next(iter(fleet.nodes.values()))

    async def run() -> None:
        watch = asyncio.create_task(fleet._watch_node(node))
        await asyncio.wait_for(done.wait(), 10)
        watch.cancel()

    asyncio.run(run())
    assert [(p["index"], p["client_since"]) for p in watches[:2]] == [("0", "0"), ("7", "7")]
    assert fetched == [f"/v1/allocation/{bare}"]
    assert fleet.known == {whole: node.id, bare: node.id}
    assert {alloc_id: update["ClientStatus"] for alloc_id, update in fleet.last.items()} == {
        whole: "running",
        bare: "running",
    }
