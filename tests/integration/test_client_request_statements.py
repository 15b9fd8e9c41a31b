"""What the two requests a fleet sends most cost in statements: a heartbeat is one statement
that also turns off the wait for the WAL flush (for itself only, never for a registration), and
a node's allocation watch asks for the tables' index and the node's own in one statement."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.state_index import current_index, next_index, node_watch_indexes
from app.store.node.heartbeat_ttl import FleetSize, HeartbeatPolicy, grant
from app.store.node.heartbeats import heartbeat
from tests.support.api import json_body, minimal_job, node_body
from tests.support.processes import wait_for
from tests.support.rows import Conn, insert_allocation, scalar

pytestmark = pytest.mark.integration


def register(client: FlaskClient) -> tuple[uuid.UUID, str]:
    node_id = uuid.uuid4()
    reply = client.put("/v1/node/register", json={"Node": node_body(str(node_id))})
    assert reply.status_code == 200 and reply.json is not None
    return node_id, str(reply.json["SecretID"])


@pytest.fixture
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements sent on `engine` while the test runs (BEGIN and COMMIT are not)."""
    sent: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield sent
    event.remove(engine, "before_cursor_execute", record)


def synchronous_commit(session: Session) -> str:
    return str(session.execute(text("SHOW synchronous_commit")).scalar_one())


def test_a_heartbeat_is_one_statement_that_commits_without_the_wal_flush(
    client: FlaskClient, engine: Engine, statements: list[str]
) -> None:
    node_id, secret = register(client)
    statements.clear()
    beat = heartbeat(sessionmaker(bind=engine), node_id, secret, HeartbeatPolicy(), "ready")
    assert beat.status == "ready" and beat.ttl.total_seconds() >= 10
    assert len(statements) == 1, statements
    with engine.connect() as conn:
        conn.execute(text("SET synchronous_commit = on"))  # the tests' throwaway server runs with it off
        conn.commit()
        session = Session(bind=conn)
        with session.begin():
            assert grant(session, node_id, secret, HeartbeatPolicy(), async_commit=True) is not None
            assert synchronous_commit(session) == "off"
        with session.begin():  # transaction-local: the connection's next transaction waits again
            assert synchronous_commit(session) == "on"
            assert grant(session, node_id, secret, HeartbeatPolicy()) is not None  # as a registration grants
            assert synchronous_commit(session) == "on"
        session.close()


def test_a_heartbeat_sizes_its_ttl_by_a_recent_count_of_the_fleet_counted_once_in_a_while(
    client: FlaskClient, engine: Engine, statements: list[str]
) -> None:
    node_id, secret = register(client)
    now = [100.0]
    fleet = FleetSize(fresh_s=5.0, clock=lambda: now[0])
    sessions = sessionmaker(bind=engine)
    statements.clear()
    heartbeat(sessions, node_id, secret, HeartbeatPolicy(), "ready", fleet)
    assert len(statements) == 2, statements  # the count, then the beat
    statements.clear()
    now[0] += 4.9
    heartbeat(sessions, node_id, secret, HeartbeatPolicy(), "ready", fleet)
    assert len(statements) == 1, statements  # the count is fresh: the beat alone
    statements.clear()
    now[0] += 0.2
    heartbeat(sessions, node_id, secret, HeartbeatPolicy(), "ready", fleet)
    assert len(statements) == 2, statements  # counted again
    # The count sizes the TTL as Nomad's formula does: nodes / per_second, then up to 2x.
    with Session(engine) as session, session.begin():
        large = grant(session, node_id, secret, HeartbeatPolicy(per_second=50.0), fleet_size=10_000)
        counted = grant(session, node_id, secret, HeartbeatPolicy(per_second=50.0))
    assert large is not None and 200 <= large.ttl.total_seconds() <= 400
    assert counted is not None and 10 <= counted.ttl.total_seconds() <= 20  # one node: the 10 s floor


def test_a_node_watch_reads_both_indexes_in_one_statement(
    client: FlaskClient, engine: Engine, statements: list[str]
) -> None:
    (one, _), (other, _) = register(client), register(client)
    tables = ["allocations", "nodes"]
    with Session(engine) as session, session.begin():
        before_one = node_watch_indexes(session, tables, one)
        before_other = node_watch_indexes(session, tables, other)
    assert before_one[1] > 0 and before_other[1] > before_one[1]  # each node's registration
    with Session(engine) as session, session.begin():
        index = next_index(session, ["nodes"])
        session.execute(text("UPDATE nodes SET modify_index = :i WHERE id = :id"), {"i": index, "id": one})
    statements.clear()
    with Session(engine) as session, session.begin():
        tables_index, one_index, one_by_servers = node_watch_indexes(session, tables, one)
        assert len(statements) == 1
        assert tables_index == current_index(session, tables) == one_index == one_by_servers == index
        assert node_watch_indexes(session, tables, other) == (index, before_other[1], before_other[1])  # not woken
        assert node_watch_indexes(session, tables, uuid.uuid4()) == (index, 0, 0)


@pytest.mark.parametrize("query", ["", "?client_since=0", "?index=1&wait=1s"])
def test_an_unknown_nodes_allocations_are_not_found_and_a_known_nodes_are_listed(
    client: FlaskClient, query: str
) -> None:
    """The watch probes the node by its key (its row is not loaded): an unknown node still gets
    the 404 its client re-registers on."""
    missing = client.get(f"/v1/node/{uuid.uuid4()}/allocations{query}")
    assert missing.status_code == 404 and missing.json is not None
    assert "NodeID" in str(missing.json["errors"])
    node_id, _ = register(client)
    found = client.get(f"/v1/node/{node_id}/allocations{query}")
    assert found.status_code == 200 and found.json == []


def test_a_watch_asked_again_with_its_last_index_parks_without_a_statement(client: FlaskClient) -> None:
    """The fleet's commonest request after a heartbeat: a client re-asking its watch with the
    index of its last answer. Once the watcher tracks nodes from at or below that index and
    saw no change to the node beyond it, the request parks without reading the database; the
    node's next change wakes it, and that wake reads once."""
    node_id, secret = register(client)
    state = client.application.extensions["corral"]
    watcher = state.watcher
    url = f"/v1/node/{node_id}/allocations"
    index = int(client.get(url).headers["X-Nomad-Index"])
    # A first short wait turns the watcher's per-node tracking on.
    assert client.get(f"{url}?index={index}&wait=1s").status_code == 200
    assert wait_for(lambda: watcher._node_base is not None and watcher._node_base <= index, 30)
    sent: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    event.listen(state.client_engine, "before_cursor_execute", record)
    try:
        answer: dict[str, int] = {}

        def ask() -> None:
            reply = client.get(f"{url}?index={index}&wait=290s", headers={"X-Nomad-Token": secret})
            answer["status"], answer["index"] = reply.status_code, int(reply.headers["X-Nomad-Index"])

        waiter = threading.Thread(target=ask, daemon=True)
        waiter.start()
        assert wait_for(lambda: node_id in watcher._node_waiters, 30)
        assert sent == []  # parked on the watcher's word alone
        changed = client.put(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "ineligible"})
        waiter.join(timeout=60)
        assert not waiter.is_alive()
        assert answer["status"] == 200 and answer["index"] >= int(json_body(changed)["Index"])
        assert sum("node_index" in s for s in sent) == 1  # the wake's one look
    finally:
        event.remove(state.client_engine, "before_cursor_execute", record)


def test_a_watch_asked_again_after_its_node_changed_answers_the_change(client: FlaskClient) -> None:
    """The change landed between the answer and the re-ask: the re-ask answers it (the watcher's
    word is only trusted up to what it has seen)."""
    node_id, _ = register(client)
    watcher = client.application.extensions["corral"].watcher
    url = f"/v1/node/{node_id}/allocations"
    index = int(client.get(url).headers["X-Nomad-Index"])
    assert client.get(f"{url}?index={index}&wait=1s").status_code == 200
    assert wait_for(lambda: watcher._node_base is not None, 30)
    changed = client.put(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "ineligible"})
    reply = client.get(f"{url}?index={index}&wait=290s")
    assert reply.status_code == 200
    assert int(reply.headers["X-Nomad-Index"]) >= int(json_body(changed)["Index"])


def _watched_job(client: FlaskClient, node_id: uuid.UUID, secret: str, alloc_id: str) -> dict[str, object]:
    reply = client.get(f"/v1/node/{node_id}/allocations?client_since=0", headers={"X-Nomad-Token": secret})
    assert reply.status_code == 200 and reply.json is not None
    entry = next(e for e in reply.json if e["ID"] == alloc_id)
    job: dict[str, object] = entry["Allocation"]["Job"]
    return job


def test_a_watch_answers_each_version_s_own_job_though_the_encoded_jobs_are_kept(client: FlaskClient, pg: Conn) -> None:
    """The encoded Job is kept per API process by the version's stamp (app.api.routes.nodes.
    client_allocs): a version marked stable, or a job's version written again (a purged job
    registered anew), answers from the row, not the kept copy."""
    node_id, secret = register(client)
    alloc = _with_allocation(client, pg, node_id, {"Meta": {"build": "one"}})
    job = _watched_job(client, node_id, secret, alloc)
    assert job["Meta"] == {"build": "one"} and job["Stable"] is False
    assert _watched_job(client, node_id, secret, alloc) == job  # from the kept copy
    pg.execute("UPDATE job_versions SET stable = true")
    assert _watched_job(client, node_id, secret, alloc)["Stable"] is True
    pg.execute(
        "UPDATE job_versions SET spec = jsonb_set(spec, '{Meta}', '{\"build\": \"two\"}'), "
        "job_modify_index = job_modify_index + 1000"
    )
    assert _watched_job(client, node_id, secret, alloc)["Meta"] == {"build": "two"}


def _with_allocation(client: FlaskClient, pg: Conn, node_id: uuid.UUID, fields: dict[str, object]) -> str:
    assert client.put("/v1/jobs", json={"Job": minimal_job("web", **fields)}).status_code == 200
    eval_id = str(scalar(pg, "SELECT id FROM evaluations WHERE job_id = 'web' ORDER BY create_index DESC LIMIT 1"))
    return insert_allocation(pg, str(node_id), eval_id)


def test_a_status_batch_reads_four_columns_of_its_node_not_the_row(client: FlaskClient, pg: Conn) -> None:
    """Every status batch of every node authenticates: the node's whole row (attributes,
    resources, drivers) is read only when the batch creates evaluations, which record it."""
    node_id, secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    alloc_id = insert_allocation(pg, str(node_id), eval_id, client_status="pending")
    headers = {"X-Nomad-Token": secret}
    url = f"/v1/node/{node_id}/allocations"
    statements: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(client.application.extensions["corral"].client_engine, "before_cursor_execute", record)
    running = client.put(url, json={"Allocs": [{"ID": alloc_id, "ClientStatus": "running"}]}, headers=headers)
    assert running.status_code == 200 and json_body(running)["Updated"] == 1
    node_reads = [s for s in statements if "FROM nodes" in s]
    assert len(node_reads) == 1 and "nodes.attributes" not in node_reads[0], node_reads
    statements.clear()
    failed = client.put(url, json={"Allocs": [{"ID": alloc_id, "ClientStatus": "failed"}]}, headers=headers)
    assert failed.status_code == 200 and len(json_body(failed)["EvalIDs"]) == 1  # the reschedule's
    assert any("nodes.attributes" in s for s in statements)  # the evaluation records the node
    unknown = client.put(f"/v1/node/{uuid.uuid4()}/allocations", json={"Allocs": []}, headers=headers)
    assert unknown.status_code == 404 and "NodeID" in unknown.get_data(as_text=True)
    wrong = client.put(url, json={"Allocs": []}, headers={"X-Nomad-Token": "not-it"})
    assert wrong.status_code == 403 and "X-Nomad-Token" in wrong.get_data(as_text=True)
    event.remove(client.application.extensions["corral"].client_engine, "before_cursor_execute", record)
