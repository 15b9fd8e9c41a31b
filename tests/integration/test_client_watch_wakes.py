"""What wakes a node's allocation watch. corral's client (?client_since) is woken by the servers'
changes only: a status its client reported moves the allocation's modify_index but never its
alloc_modify_index, and answering it would cost the node a read and an answer with nothing new
in it (a third of a placement storm's work). Nomad's shape (no client_since) is woken by every
change to the node's allocations, as before."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from app.db.state_index import node_watch_indexes
from tests.support.api import json_body, minimal_job, node_body
from tests.support.processes import wait_for
from tests.support.rows import Conn, insert_allocation, scalar

pytestmark = pytest.mark.integration
TABLES = ["allocations", "nodes"]


def register(client: FlaskClient) -> tuple[str, str]:
    node_id = str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id)})
    assert reply.status_code == 200 and reply.json is not None
    return node_id, str(reply.json["SecretID"])


def placed(client: FlaskClient, pg: Conn, node_id: str) -> str:
    """A job and one allocation of it on the node, indexed as the applier does."""
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    alloc_id = insert_allocation(pg, node_id, eval_id, client_status="pending")
    pg.execute("INSERT INTO state_index (name, value) VALUES ('allocations', state_index_own())")
    return alloc_id


def report(client: FlaskClient, node_id: str, secret: str, alloc_id: str, status: str) -> int:
    reply = client.put(
        f"/v1/node/{node_id}/allocations",
        json={"Allocs": [{"ID": alloc_id, "ClientStatus": status}]},
        headers={"X-Nomad-Token": secret},
    )
    assert reply.status_code == 200, reply.get_data(as_text=True)
    return int(json_body(reply)["Index"])


@pytest.fixture
def looks(client: FlaskClient) -> Iterator[list[str]]:
    """The node_watch_indexes statements the client lane sends while the test runs."""
    state = client.application.extensions["corral"]
    sent: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "node_server_index" in statement:
            sent.append(statement)

    event.listen(state.client_engine, "before_cursor_execute", record)
    yield sent
    event.remove(state.client_engine, "before_cursor_execute", record)


def test_the_servers_index_of_a_node_leaves_out_its_clients_reports(
    client: FlaskClient, engine: Engine, pg: Conn
) -> None:
    node_id, secret = register(client)
    alloc_id = placed(client, pg, node_id)
    key = uuid.UUID(node_id)
    with Session(engine) as session, session.begin():
        before = node_watch_indexes(session, TABLES, key)
    assert before.node_index == before.node_server_index > 0
    reported = report(client, node_id, secret, alloc_id, "running")
    with Session(engine) as session, session.begin():
        after = node_watch_indexes(session, TABLES, key)
    assert after.node_index == reported > before.node_index
    assert after.node_server_index == before.node_server_index  # the client's own report
    stopped = client.put(f"/v1/allocation/{alloc_id}/stop")
    assert stopped.status_code == 200
    with Session(engine) as session, session.begin():
        last = node_watch_indexes(session, TABLES, key)
    assert last.node_server_index == last.node_index > reported  # the servers' change


def _held(client: FlaskClient, url: str, secret: str, answer: dict[str, int]) -> threading.Thread:
    def ask() -> None:
        reply = client.get(url, headers={"X-Nomad-Token": secret})
        answer["status"], answer["index"] = reply.status_code, int(reply.headers["X-Nomad-Index"])

    waiter = threading.Thread(target=ask, daemon=True)
    waiter.start()
    return waiter


def _first_answer(client: FlaskClient, node_id: str, secret: str, query: str) -> int:
    """Ask once (and once more with a short wait, which turns on the watcher's node tracking)."""
    url = f"/v1/node/{node_id}/allocations?{query}"
    index = int(client.get(url, headers={"X-Nomad-Token": secret}).headers["X-Nomad-Index"])
    watcher = client.application.extensions["corral"].watcher
    client.get(f"{url}&index={index}&wait=1s", headers={"X-Nomad-Token": secret})
    assert wait_for(lambda: watcher._node_base is not None and watcher._node_base <= index, 30)
    return index


def test_a_client_watch_sleeps_through_its_own_report_and_answers_the_servers_change(
    client: FlaskClient, pg: Conn, looks: list[str]
) -> None:
    node_id, secret = register(client)
    alloc_id = placed(client, pg, node_id)
    watcher = client.application.extensions["corral"].watcher
    index = _first_answer(client, node_id, secret, "client_since=0")
    answer: dict[str, int] = {}
    url = f"/v1/node/{node_id}/allocations?index={index}&client_since={index}&wait=290s"
    looks.clear()
    waiter = _held(client, url, secret, answer)
    assert wait_for(lambda: uuid.UUID(node_id) in watcher._node_waiters, 30)

    reported = report(client, node_id, secret, alloc_id, "running")
    assert wait_for(lambda: watcher._node_level >= reported, 30)  # the watcher saw the report
    time.sleep(0.5)  # time for a wrongly woken waiter to look and answer
    assert waiter.is_alive() and not answer
    assert looks == []  # the report cost the watch no database read

    stopped = client.put(f"/v1/allocation/{alloc_id}/stop")
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert answer["status"] == 200 and answer["index"] >= int(json_body(stopped)["Index"])
    assert len(looks) == 1  # the servers' change: one look, then the answer


def test_nomads_watch_is_still_woken_by_the_clients_report(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    alloc_id = placed(client, pg, node_id)
    index = _first_answer(client, node_id, secret, "")
    answer: dict[str, int] = {}
    waiter = _held(client, f"/v1/node/{node_id}/allocations?index={index}&wait=290s", secret, answer)
    watcher = client.application.extensions["corral"].watcher
    assert wait_for(lambda: uuid.UUID(node_id) in watcher._node_waiters, 30)
    reported = report(client, node_id, secret, alloc_id, "running")
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert answer["status"] == 200 and answer["index"] >= reported


def test_a_client_watch_asked_again_after_its_own_report_parks(client: FlaskClient, pg: Conn) -> None:
    """The report landed between the answer and the re-ask: the watcher's word that the servers
    changed nothing past the index is enough to park (no read), and the next change answers."""
    node_id, secret = register(client)
    alloc_id = placed(client, pg, node_id)
    watcher = client.application.extensions["corral"].watcher
    index = _first_answer(client, node_id, secret, "client_since=0")
    reported = report(client, node_id, secret, alloc_id, "running")
    assert wait_for(lambda: watcher._node_level >= reported, 30)
    assert watcher.node_unmoved(uuid.UUID(node_id), index, servers_only=True)
    assert not watcher.node_unmoved(uuid.UUID(node_id), index)  # Nomad's shape would answer it
