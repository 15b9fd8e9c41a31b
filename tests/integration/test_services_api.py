"""Nomad's service catalog through the API: the client's registrations (by node secret), the
read routes, ?choose=, the operator's delete, and the lifecycle: registrations go when their
allocation turns terminal (client report, server-side lost) or their node goes down, and
registering again never duplicates."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.events import events, heartbeats, read_frames
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


@dataclass(frozen=True)
class Node:
    id: str
    secret: str


def _node(client: FlaskClient) -> Node:
    node_id = str(uuid.uuid4())
    answer = client.put("/v1/node/register", json={"Node": node_body(node_id)})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return Node(node_id, json_body(answer)["SecretID"])


def _setup(client: FlaskClient, pg: Conn, allocs: int = 2) -> tuple[Node, list[str]]:
    assert client.put("/v1/jobs", json={"Job": minimal_job("web")}).status_code == 200
    node = _node(client)
    row = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web' LIMIT 1").fetchone()
    assert row is not None
    return node, [insert_allocation(pg, node.id, str(row[0])) for _ in range(allocs)]


def _reg(alloc_id: str, port: int, name: str = "web", tags: list[str] | None = None) -> dict[str, Any]:
    return {
        "ID": f"_nomad-task-{alloc_id}-group-g-{name}-http",
        "ServiceName": name,
        "Tags": tags if tags is not None else ["v1"],
        "Address": "127.0.0.1",
        "Port": port,
    }


def _sync(client: FlaskClient, node: Node, allocs: dict[str, list[dict[str, Any]]]) -> Any:
    answer = client.put(f"/v1/node/{node.id}/services", json={"Allocs": allocs}, headers={"X-Nomad-Token": node.secret})
    return answer


def _count(pg: Conn) -> int:
    row = pg.execute("SELECT count(*) FROM service_registrations").fetchone()
    assert row is not None
    return int(str(row[0]))


def test_registrations_are_served_in_nomads_shapes(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    answer = _sync(client, node, {a: [_reg(a, 8001)], b: [_reg(b, 8002, tags=["v2"])]})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.json["Upserted"] == 2

    assert client.get("/v1/services").json == [
        {"Namespace": "default", "Services": [{"ServiceName": "web", "Tags": ["v1", "v2"]}]}
    ]
    found = client.get("/v1/service/web")
    assert found.status_code == 200 and int(found.headers["X-Nomad-Index"]) > 0
    instances = sorted(json_body(found), key=lambda r: r["Port"])
    assert [(r["AllocID"], r["Port"]) for r in instances] == [(a, 8001), (b, 8002)]
    first = instances[0]
    assert first["ID"] == f"_nomad-task-{a}-group-g-web-http"
    assert (first["Namespace"], first["JobID"], first["NodeID"], first["Datacenter"]) == (
        "default",
        "web",
        node.id,
        "dc1",
    )
    assert first["CreateIndex"] == first["ModifyIndex"] > 0
    assert sorted(r["AllocID"] for r in json_body(client.get("/v1/job/web/services"))) == sorted([a, b])
    assert [r["Port"] for r in json_body(client.get(f"/v1/allocation/{a}/services"))] == [8001]
    assert client.get("/v1/service/nothing").json == []


def test_registering_again_changes_nothing_and_never_duplicates(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    regs = {a: [_reg(a, 8001)], b: [_reg(b, 8002)]}
    assert _sync(client, node, regs).status_code == 200
    before = client.get("/v1/service/web").json
    again = _sync(client, node, regs)  # a restarted client registers everything again
    assert again.json == {"Index": 0, "Upserted": 0, "Removed": 0}
    assert client.get("/v1/service/web").json == before
    assert _count(pg) == 2

    moved = _sync(client, node, {a: [_reg(a, 9001)]})  # same ID, new port: updated in place
    assert moved.json["Upserted"] == 1
    updated = {r["AllocID"]: r for r in json_body(client.get("/v1/service/web"))}
    assert updated[a]["Port"] == 9001 and updated[a]["ModifyIndex"] > updated[a]["CreateIndex"]
    assert _count(pg) == 2


def test_an_empty_list_deregisters_and_a_changed_set_drops_what_it_left_out(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    _sync(client, node, {a: [_reg(a, 8001), _reg(a, 8001, name="admin")], b: [_reg(b, 8002)]})
    assert _count(pg) == 3
    assert _sync(client, node, {a: [_reg(a, 8001)]}).json["Removed"] == 1
    assert _sync(client, node, {b: []}).json["Removed"] == 1
    assert [r["AllocID"] for r in json_body(client.get("/v1/service/web"))] == [a]


def test_a_terminal_allocation_loses_its_registrations(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    _sync(client, node, {a: [_reg(a, 8001)], b: [_reg(b, 8002)]})
    index = int(client.get("/v1/service/web").headers["X-Nomad-Index"])
    reported = client.put(
        f"/v1/node/{node.id}/allocations",
        json={"Allocs": [{"ID": a, "ClientStatus": "complete"}]},
        headers={"X-Nomad-Token": node.secret},
    )
    assert reported.status_code == 200, reported.get_data(as_text=True)
    after = client.get("/v1/service/web")
    assert [r["AllocID"] for r in json_body(after)] == [b]
    assert int(after.headers["X-Nomad-Index"]) > index  # blocking reads of the catalog wake
    pg.execute("UPDATE allocations SET client_status = 'lost' WHERE id = %s", (b,))  # the scheduler's lost
    assert client.get("/v1/service/web").json == []
    # A late registration for a terminal allocation would be an orphan: refused.
    assert _sync(client, node, {a: [_reg(a, 8001)]}).json["Upserted"] == 0
    assert _count(pg) == 0


def test_a_node_going_down_takes_its_registrations(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    _sync(client, node, {a: [_reg(a, 8001)], b: [_reg(b, 8002)]})
    pg.execute("UPDATE nodes SET status = 'down' WHERE id = %s", (node.id,))
    assert _count(pg) == 0
    assert _sync(client, node, {a: [_reg(a, 8001)]}).json["Upserted"] == 0


def test_a_node_registers_only_its_own_allocations(client: FlaskClient, pg: Conn) -> None:
    node, (a, _b) = _setup(client, pg)
    other = _node(client)
    assert _sync(client, other, {a: [_reg(a, 8001)]}).json["Upserted"] == 0
    assert _count(pg) == 0
    wrong = client.put(
        f"/v1/node/{node.id}/services", json={"Allocs": {a: [_reg(a, 1)]}}, headers={"X-Nomad-Token": other.secret}
    )
    assert wrong.status_code == 403
    bad = _sync(client, node, {a: [{"ID": "", "ServiceName": "web"}]})
    assert bad.status_code == 400 and "ID" in bad.get_data(as_text=True)


def test_choose_picks_a_stable_subset_by_rendezvous_hashing(client: FlaskClient, pg: Conn) -> None:
    node, allocs = _setup(client, pg, allocs=4)
    _sync(client, node, {alloc: [_reg(alloc, 8000 + i)] for i, alloc in enumerate(allocs)})
    two = client.get("/v1/service/web?choose=2|caller-a")
    assert two.status_code == 200 and len(json_body(two)) == 2
    assert client.get("/v1/service/web?choose=2|caller-a").json == two.json
    assert len(json_body(client.get("/v1/service/web?choose=9|caller-a"))) == 4
    picks = {tuple(r["ID"] for r in json_body(client.get(f"/v1/service/web?choose=1|k{i}"))) for i in range(12)}
    assert len(picks) > 1  # different keys spread over the instances
    for malformed in ("2", "x|key", "2|"):
        refused = client.get(f"/v1/service/web?choose={malformed}")
        assert refused.status_code == 400 and "choose" in refused.get_data(as_text=True)


def test_the_operator_deletes_one_registration(client: FlaskClient, pg: Conn) -> None:
    node, (a, b) = _setup(client, pg)
    _sync(client, node, {a: [_reg(a, 8001)], b: [_reg(b, 8002)]})
    target = f"_nomad-task-{a}-group-g-web-http"
    assert client.delete(f"/v1/service/web/{target}").status_code == 200
    assert [r["AllocID"] for r in json_body(client.get("/v1/service/web"))] == [b]
    missing = client.delete(f"/v1/service/web/{target}")
    assert missing.status_code == 404 and "ID" in missing.get_data(as_text=True)


def test_collected_allocations_take_their_registrations(client: FlaskClient, pg: Conn) -> None:
    node, (a, _b) = _setup(client, pg)
    _sync(client, node, {a: [_reg(a, 8001)]})
    pg.execute("DELETE FROM allocations WHERE id = %s", (a,))
    assert _count(pg) == 0


def test_the_event_stream_publishes_registrations_and_deregistrations(database_url: str, pg: Conn) -> None:
    app = create_app(
        Settings(database_url=database_url, max_blocking_wait_s=5, event_stream_heartbeat_s=0.2), database_url
    )
    client = app.test_client()
    try:
        node, (a, b) = _setup(client, pg)
        _sync(client, node, {a: [_reg(a, 8001)], b: [_reg(b, 8002)]})
        _sync(client, node, {a: [_reg(a, 9001)]})  # a changed registration
        pg.execute("UPDATE allocations SET client_status = 'lost' WHERE id = %s", (b,))
        found = events(read_frames(client, "topic=Service:web", until=heartbeats(3)))  # by service name
        ia, ib = f"_nomad-task-{a}-group-g-web-http", f"_nomad-task-{b}-group-g-web-http"
        pairs = [(e["Type"], e["Key"]) for e in found]
        # The first registration of both is one write (one index): their order within it is free.
        assert sorted(pairs[:2]) == sorted([("ServiceRegistration", ia), ("ServiceRegistration", ib)])
        assert pairs[2:] == [("ServiceRegistration", ia), ("ServiceDeregistration", ib)]
        assert {e["Namespace"] for e in found} == {"default"}
        assert found[-1]["Payload"]["Service"]["AllocID"] == b and found[-1]["FilterKeys"] == ["web", "web"]
        assert [e["Payload"]["Service"]["Port"] for e in found if e["Key"] == ia] == [8001, 9001]
        assert events(read_frames(client, "topic=Service:other", until=heartbeats(2))) == []
    finally:
        app.extensions["corral"].close()
