"""The client protocol on the server: heartbeats (TTL, authentication, expiry to down and the
way back through initializing) and allocation status batches (capacity, alloc-failure evals)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import create_app
from app.api.http.client_turns import ClientTurns
from app.db.engines import libpq_url
from app.leader.heartbeat_expiry import expire
from app.leader.node_lifecycle import node_lifecycle
from app.settings.config import Settings
from client.tasks import task_state
from tests.support.api import json_body, minimal_job, node_body
from tests.support.rows import insert_allocation, scalar

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
NANOS = 1_000_000_000


@pytest.fixture
def fast(database_url: str) -> Iterator[FlaskClient]:
    settings = Settings(database_url=database_url, heartbeat_min_ttl_s=2, heartbeat_grace_s=1)
    app = create_app(settings, database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def register(client: FlaskClient, node_id: str | None = None) -> tuple[str, str]:
    node_id = node_id or str(uuid.uuid4())
    body = client.put("/v1/node/register", json={"Node": node_body(node_id)}).json
    assert body is not None
    return node_id, str(body["SecretID"])


def beat(client: FlaskClient, node_id: str, secret: str, **body: Any) -> Any:
    return client.put(f"/v1/node/{node_id}/heartbeat", json=body, headers={"X-Nomad-Token": secret})


def replanned(pg: Conn, count_sql: str) -> int:
    row = pg.execute(count_sql).fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


def test_heartbeat_grants_the_ttl_and_checks_the_secret(fast: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(fast)
    answer = beat(fast, node_id, secret)
    assert answer.status_code == 200
    # Nomad's formula for a small fleet: the minimum TTL, spread up to twice it.
    assert 2 * NANOS <= answer.json["HeartbeatTTL"] <= 4 * NANOS
    assert answer.json["NodeStatus"] == "ready"
    heartbeat = pg.execute(
        "SELECT ttl_ms, extract(epoch FROM expires_at - last_seen_at) * 1000 - ttl_ms FROM node_heartbeats"
    ).fetchone()
    assert heartbeat is not None
    ttl_ms, slack = heartbeat
    assert isinstance(ttl_ms, int) and isinstance(slack, Decimal)
    assert abs(ttl_ms * 1_000_000 - answer.json["HeartbeatTTL"]) <= 1_000_000 and 999 <= slack <= 1000  # grace
    wrong = beat(fast, node_id, "not-the-secret")
    assert wrong.status_code == 403 and wrong.json["errors"][0]["field"] == "X-Nomad-Token"
    missing = fast.put(f"/v1/node/{node_id}/heartbeat", json={})
    assert missing.status_code == 403
    unknown = beat(fast, str(uuid.uuid4()), secret)
    assert unknown.status_code == 404
    bad = beat(fast, node_id, secret, Status="down")
    assert bad.status_code == 400 and bad.json["errors"][0]["field"] == "Status"


def test_expired_node_goes_down_and_returns_through_initializing(fast: FlaskClient, engine: Engine, pg: Conn) -> None:
    node_id, secret = register(fast)
    fast.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    alloc = insert_allocation(pg, node_id, eval_id)
    # Not yet expired. The 3 s TTL + grace may already have passed on a loaded machine (CI saw
    # it), so the deadline is set ahead rather than trusting the clock.
    pg.execute("UPDATE node_heartbeats SET expires_at = now() + interval '1 minute'")
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 0
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 1
    assert pg.execute("SELECT status FROM nodes").fetchone() == ("down",)
    assert pg.execute("SELECT count(*) FROM node_heartbeats").fetchone() == (0,)
    node_update = pg.execute(
        "SELECT job_id FROM evaluations WHERE triggered_by = 'node-update' AND node_id = %s", (node_id,)
    ).fetchall()
    assert node_update == [("web",)]
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (alloc,)).fetchone() == ("running",)

    back = beat(fast, node_id, secret, Status="ready")
    assert back.json["NodeStatus"] == "initializing", "ready only after the client has re-sent its allocations"
    assert beat(fast, node_id, secret, Status="ready").json["NodeStatus"] == "ready"


def test_failover_ttl_for_live_nodes_without_a_heartbeat_row(fast: FlaskClient, engine: Engine, pg: Conn) -> None:
    register(fast)
    pg.execute("DELETE FROM node_heartbeats")  # what a crash does to an UNLOGGED table
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 0
    remaining = pg.execute("SELECT extract(epoch FROM expires_at - now()) FROM node_heartbeats").fetchone()
    assert remaining is not None and isinstance(remaining[0], Decimal) and 290 < remaining[0] <= 300


def updates(client: FlaskClient, node_id: str, secret: str, *allocs: dict[str, Any]) -> Any:
    return client.put(
        f"/v1/node/{node_id}/allocations", json={"Allocs": list(allocs)}, headers={"X-Nomad-Token": secret}
    )


def test_alloc_updates_free_capacity_and_ask_for_a_reschedule(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    a, b = insert_allocation(pg, node_id, eval_id), insert_allocation(pg, node_id, eval_id)
    running = {"ID": a, "ClientStatus": "running", "TaskStates": {"t": {"State": "running"}}}
    answer = updates(client, node_id, secret, running)
    assert answer.status_code == 200 and answer.json["EvalIDs"] == []
    assert pg.execute("SELECT live_allocs FROM node_usage").fetchone() == (2,)

    failed = {"ID": a, "ClientStatus": "failed", "ClientDescription": "exit 1", "TaskStates": {"t": {"State": "dead"}}}
    done = {"ID": b, "ClientStatus": "complete"}
    answer = updates(client, node_id, secret, failed, done)
    assert answer.status_code == 200 and len(answer.json["EvalIDs"]) == 1
    trigger = pg.execute("SELECT triggered_by, job_id FROM evaluations WHERE id = %s", (answer.json["EvalIDs"][0],))
    assert trigger.fetchone() == ("alloc-failure", "web")
    assert pg.execute("SELECT live_allocs FROM node_usage").fetchone() == (0,)
    assert pg.execute("SELECT client_status, task_states FROM allocations WHERE id = %s", (a,)).fetchone() == (
        "failed",
        {"t": {**task_state.new_state(), "State": "dead", "Events": None}},  # Nomad's zero values filled in
    )
    # Finished is final: a late "running" cannot resurrect it.
    updates(client, node_id, secret, {"ID": a, "ClientStatus": "running"})
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (a,)).fetchone() == ("failed",)


def test_alloc_updates_reject_bad_input_and_other_nodes_allocations(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    other, other_secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    mine, theirs = insert_allocation(pg, node_id, eval_id), insert_allocation(pg, other, eval_id)
    wrong = updates(
        client, node_id, secret, {"ID": mine, "ClientStatus": "running"}, {"ID": theirs, "ClientStatus": "failed"}
    )
    assert wrong.status_code == 403 and wrong.json["errors"][0]["field"] == "Allocs[1].ID"
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (mine,)).fetchone() == ("running",)
    bad = updates(client, node_id, secret, {"ID": mine, "ClientStatus": "lost"})
    assert bad.status_code == 400 and bad.json["errors"][0]["field"] == "Allocs[0].ClientStatus"
    assert updates(client, node_id, other_secret, {"ID": mine, "ClientStatus": "running"}).status_code == 403


def test_failures_get_delayed_reschedule_evals_grouped_per_job(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})  # service defaults: 30 s, exponential, unlimited
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    a, b, c = (insert_allocation(pg, node_id, eval_id) for _ in range(3))
    history = psycopg.types.json.Jsonb({"Events": [{"RescheduleTime": 0, "Delay": 30 * NANOS}]})
    pg.execute("UPDATE allocations SET reschedule_tracker = %s WHERE id = %s", (history, b))
    failed = [{"ID": x, "ClientStatus": "failed"} for x in (a, b, c)]
    answer = updates(client, node_id, secret, *failed)
    assert len(answer.json["EvalIDs"]) == 2, "a and c are due together, b 30 s later: two windows"
    rows = pg.execute(
        "SELECT a.id, a.reschedule_tracker->'NextDelay', e.triggered_by, "
        "round(extract(epoch FROM e.wait_until - now())) FROM allocations a "
        "JOIN evaluations e ON e.id = a.followup_eval_id"
    ).fetchall()
    found = {str(r[0]): (r[1], r[2]) for r in rows}
    assert found == {
        a: (30 * NANOS, "alloc-failure"),
        b: (60 * NANOS, "alloc-failure"),
        c: (30 * NANOS, "alloc-failure"),
    }
    waits = sorted(int(wait) for *_, wait in rows if isinstance(wait, Decimal))  # numeric: seconds
    assert len(waits) == len(rows)
    assert 25 <= waits[0] <= 30 and 55 <= waits[2] <= 60


def test_no_reschedule_eval_once_attempts_are_used_up(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    once = {
        "Attempts": 1,
        "Interval": 3600 * NANOS,
        "Delay": 5 * NANOS,
        "DelayFunction": "constant",
        "Unlimited": False,
    }
    client.put(
        "/v1/jobs",
        json={"Job": minimal_job("web", TaskGroups=[{**minimal_job()["TaskGroups"][0], "ReschedulePolicy": once}])},
    )
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    alloc = insert_allocation(pg, node_id, eval_id)
    recent = psycopg.types.json.Jsonb({"Events": [{"RescheduleTime": time.time_ns(), "Delay": 5 * NANOS}]})
    pg.execute("UPDATE allocations SET reschedule_tracker = %s WHERE id = %s", (recent, alloc))
    answer = updates(client, node_id, secret, {"ID": alloc, "ClientStatus": "failed"})
    assert answer.json["EvalIDs"] == []


def disconnecting_job(client: FlaskClient, pg: Conn, node_id: str) -> str:
    group = {**minimal_job()["TaskGroups"][0], "Count": 1, "Disconnect": {"LostAfter": "1h"}}
    client.put("/v1/jobs", json={"Job": minimal_job("web", TaskGroups=[group])})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    return insert_allocation(pg, node_id, eval_id)


def test_silent_node_with_a_disconnect_window_is_disconnected_and_can_reconnect(
    fast: FlaskClient, engine: Engine, pg: Conn
) -> None:
    node_id, secret = register(fast)
    alloc = disconnecting_job(fast, pg, node_id)
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 1
    assert pg.execute("SELECT status FROM nodes").fetchone() == ("disconnected",)
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (alloc,)).fetchone() == ("unknown",)
    # The servers' verdict: it moves AllocModifyIndex, so the node's client watch hears of it.
    indexes = pg.execute("SELECT alloc_modify_index, modify_index FROM allocations WHERE id = %s", (alloc,))
    marked = indexes.fetchone()
    assert marked is not None and marked[0] == marked[1]
    timeout = pg.execute(
        "SELECT round(extract(epoch FROM wait_until - now()) / 60) FROM evaluations "
        "WHERE triggered_by = 'max-disconnect-timeout'"
    ).fetchall()
    assert timeout == [(60,)]
    assert beat(fast, node_id, secret, Status="ready").json["NodeStatus"] == "initializing"
    answer = updates(fast, node_id, secret, {"ID": alloc, "ClientStatus": "running"})
    trigger = pg.execute("SELECT triggered_by FROM evaluations WHERE id = %s", (answer.json["EvalIDs"][0],))
    assert trigger.fetchone() == ("reconnect",)
    assert beat(fast, node_id, secret, Status="ready").json["NodeStatus"] == "ready"


def test_a_disconnected_node_must_heartbeat_before_it_reports_allocations(
    fast: FlaskClient, engine: Engine, pg: Conn
) -> None:
    # A returning client whose report reached the scheduler while its node still counted as
    # disconnected had its allocations marked lost right as they came back (a CI flake).
    node_id, secret = register(fast)
    alloc = disconnecting_job(fast, pg, node_id)
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 1
    evals_before = pg.execute("SELECT count(*) FROM evaluations").fetchone()
    refused = updates(fast, node_id, secret, {"ID": alloc, "ClientStatus": "running"})
    assert refused.status_code == 409 and refused.json["errors"][0]["field"] == "NodeID"
    assert "disconnected" in refused.json["errors"][0]["message"]
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (alloc,)).fetchone() == ("unknown",)
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == evals_before  # nothing half-written
    assert beat(fast, node_id, secret, Status="initializing").json["NodeStatus"] == "initializing"
    assert updates(fast, node_id, secret, {"ID": alloc, "ClientStatus": "running"}).status_code == 200
    pg.execute("UPDATE nodes SET status = 'down'")
    assert updates(fast, node_id, secret, {"ID": alloc, "ClientStatus": "running"}).status_code == 409


def test_unknown_allocations_are_lost_once_the_window_ends(fast: FlaskClient, engine: Engine, pg: Conn) -> None:
    node_id, _ = register(fast)
    alloc = disconnecting_job(fast, pg, node_id)
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        expire(session, 300)
    with Session(engine) as session, session.begin():
        assert node_lifecycle(session) == 0, "still within lost_after"
    pg.execute("UPDATE nodes SET status_updated_at = now() - interval '2 hours'")
    with Session(engine) as session, session.begin():
        assert node_lifecycle(session) == 2, "one allocation lost, then its node settled"
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (alloc,)).fetchone() == ("lost",)
    first_timeout = "SELECT min(create_index) FROM evaluations WHERE triggered_by = 'max-disconnect-timeout'"
    unknown_at = int(str(scalar(pg, first_timeout)))
    lost_at = pg.execute("SELECT alloc_modify_index, modify_index FROM allocations WHERE id = %s", (alloc,)).fetchone()
    assert lost_at is not None and lost_at[0] == lost_at[1]
    assert int(str(lost_at[0])) > unknown_at  # the servers' change, after the one that made it unknown
    assert pg.execute("SELECT status, status_description FROM nodes").fetchone() == (
        "down",
        "node stayed disconnected past every allocation's disconnect window",
    )
    assert pg.execute(
        "SELECT count(*) FROM evaluations WHERE triggered_by = 'max-disconnect-timeout' AND wait_until IS NULL"
    ).fetchone() == (1,)


def test_disconnected_node_stays_while_an_allocation_still_waits_for_it(
    fast: FlaskClient, engine: Engine, pg: Conn
) -> None:
    node_id, _ = register(fast)
    alloc = disconnecting_job(fast, pg, node_id)
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        expire(session, 300)
    with Session(engine) as session, session.begin():
        node_lifecycle(session)
    assert pg.execute("SELECT status FROM nodes").fetchone() == ("disconnected",)
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = %s", (alloc,))  # e.g. the job stopped
    replans = "SELECT count(*) FROM evaluations WHERE triggered_by = 'node-update'"
    before = replanned(pg, replans)
    with Session(engine) as session, session.begin():
        assert node_lifecycle(session) == 1
    assert pg.execute("SELECT status FROM nodes").fetchone() == ("down",)
    assert replanned(pg, replans) == before + 1, "going down re-plans the node's job"


def test_forced_client_gc_reaches_nodes_through_their_heartbeat(fast: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(fast)
    other, other_secret = register(fast)
    assert beat(fast, node_id, secret).json["ForceGCIndex"] == 0
    one = fast.put(f"/v1/client/gc?node_id={node_id}")
    assert one.status_code == 200 and json_body(one)["Nodes"] == 1
    assert json_body(beat(fast, node_id, secret))["ForceGCIndex"] == json_body(one)["Index"]
    assert beat(fast, other, other_secret).json["ForceGCIndex"] == 0
    # Without node_id: the client local to the answering server, as Nomad's agent uses its own;
    # these nodes advertise 10.0.0.1, so there is none, and nothing is stamped.
    unnamed = fast.put("/v1/client/gc")
    assert unnamed.status_code == 400
    [error] = json_body(unnamed)["errors"]
    assert error["field"] == "node_id" and "No local Node and node_id not provided" in error["message"]
    assert beat(fast, other, other_secret).json["ForceGCIndex"] == 0
    # A client on this host (its HTTP address on loopback; nothing listens there, so it is told
    # at its next heartbeat rather than at once) is the one an unnamed request reaches.
    local_id = str(uuid.uuid4())
    answer = fast.put("/v1/node/register", json={"Node": node_body(local_id, HTTPAddr="127.0.0.1:9")}).json
    assert answer is not None
    local = fast.put("/v1/client/gc")
    assert local.status_code == 200 and json_body(local)["Nodes"] == 1 and "Collected" not in json_body(local)
    assert json_body(beat(fast, local_id, answer["SecretID"]))["ForceGCIndex"] == json_body(local)["Index"]
    assert beat(fast, other, other_secret).json["ForceGCIndex"] == 0
    assert fast.put(f"/v1/client/gc?node_id={uuid.uuid4()}").status_code == 404
    assert json_body(fast.put("/v1/client/gc?node_id=nope"))["errors"][0]["field"] == "node_id"


def test_destroyed_allocations_are_recorded(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    alloc = insert_allocation(pg, node_id, eval_id, client_status="complete")
    pg.execute("UPDATE allocations SET modify_time = now() - interval '1 hour'")
    updates(client, node_id, secret, {"ID": alloc, "ClientStatus": "complete", "Destroyed": True})
    row = pg.execute("SELECT client_gc_time IS NOT NULL, modify_time < now() - interval '59 minutes' FROM allocations")
    assert row.fetchone() == (True, True), "recorded, and not made young for the server's GC"


def watch(client: FlaskClient, node_id: str, secret: str, query: str) -> Any:
    return client.get(f"/v1/node/{node_id}/allocations?{query}", headers={"X-Nomad-Token": secret})


def test_the_clients_watch_sends_only_what_the_servers_changed_whole(client: FlaskClient, pg: Conn) -> None:
    """corral's client (?client_since=N): every allocation's state, and whole only those whose
    AllocModifyIndex passed N; the client's own reports do not make them whole again."""
    node_id, secret = register(client)
    client.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    a, b = insert_allocation(pg, node_id, eval_id), insert_allocation(pg, node_id, eval_id)
    pg.execute("INSERT INTO state_index (name, value) VALUES ('allocations', state_index_own())")  # as the applier
    first = watch(client, node_id, secret, "client_since=0")
    assert first.status_code == 200 and [e["ID"] for e in first.json] == [a, b]
    whole = first.json[0]["Allocation"]
    assert whole["ID"] == a and whole["Job"]["ID"] == "web" and whole["TaskGroup"] == "g"
    seen = int(first.headers["X-Nomad-Index"])

    assert updates(client, node_id, secret, {"ID": a, "ClientStatus": "failed"}).status_code == 200
    c = insert_allocation(pg, node_id, eval_id)
    assert client.put(f"/v1/allocation/{b}/stop").status_code == 200
    later = watch(client, node_id, secret, f"client_since={seen}")
    entries = {e["ID"]: e for e in later.json}
    assert entries[a]["Allocation"] is None and entries[a]["ClientStatus"] == "failed"
    assert entries[b]["Allocation"]["ID"] == b and entries[b]["DesiredTransition"] == {"Migrate": True}
    assert entries[c]["Allocation"]["ID"] == c and entries[c]["DesiredStatus"] == "run"
    assert entries[c]["AllocModifyIndex"] > seen >= entries[a]["AllocModifyIndex"]

    nomads = watch(client, node_id, secret, "")  # Nomad's clients keep Nomad's shape
    assert {e["ID"] for e in nomads.json} == {a, b, c} and "Allocation" not in nomads.json[0]
    for query, field in (("client_since=-1", "client_since"), ("client_since=0&filter=ID%20!=%20%22%22", "filter")):
        refused = watch(client, node_id, secret, query)
        assert refused.status_code == 400 and refused.json["errors"][0]["field"] == field


def test_marking_a_node_down_never_blocks_placements_onto_it(
    fast: FlaskClient, engine: Engine, pg: Conn, database_url: str
) -> None:
    """The leader's expiry locks the node FOR NO KEY UPDATE: an allocation inserted on that node
    meanwhile (the applier's COPY takes FOR KEY SHARE on it, through the foreign key) goes
    through at once. With FOR UPDATE the insert waited, and the applier's batch and the leader's
    batch deadlocked under a fleet storm."""
    node_id, _ = register(fast)
    fast.put("/v1/jobs", json={"Job": minimal_job("web")})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    pg.execute("UPDATE node_heartbeats SET expires_at = now() - interval '1 second'")
    with Session(engine) as session, session.begin():
        assert expire(session, 300) == 1  # the node's row is locked until this block commits
        with psycopg.connect(libpq_url(database_url), autocommit=True) as other:
            other.execute("SET lock_timeout = '2s'")
            insert_allocation(other, node_id, eval_id)  # LockNotAvailable if it had to wait
    assert pg.execute("SELECT status FROM nodes").fetchone() == ("down",)
    assert pg.execute("SELECT count(*) FROM allocations WHERE node_id = %s", (node_id,)).fetchone() == (1,)


def write_turn_holder(turns: ClientTurns) -> tuple[Callable[[], None], threading.Event, threading.Event]:
    """A thread's target that takes a client write turn and keeps it until `release` is set;
    `held` is set once it has the turn."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with turns.write():
            held.set()
            release.wait(10)

    return hold, held, release


def test_an_allocation_update_behind_a_full_line_is_answered_503_at_once(database_url: str) -> None:
    """A client write that would wait behind http_client_write_queue others is refused with
    Retry-After (the client resends it), rather than done after its client gave up."""
    settings = Settings(database_url=database_url, http_node_pool_size=2, http_client_write_queue=1)
    app = create_app(settings, database_url)
    client = app.test_client()
    turns = app.extensions["corral"].client_share
    hold, held, release = write_turn_holder(turns)

    def wait_in_line() -> None:
        with turns.write():
            pass

    threads = [threading.Thread(target=hold), threading.Thread(target=wait_in_line)]
    try:
        node_id, secret = register(client)
        threads[0].start()
        assert held.wait(10)
        threads[1].start()
        deadline = time.monotonic() + 10
        while turns.waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        update: dict[str, list[object]] = {"Allocs": []}
        refused = client.put(f"/v1/node/{node_id}/allocations", json=update, headers={"X-Nomad-Token": secret})
        assert refused.status_code == 503, refused.get_data(as_text=True)
        assert refused.headers["Retry-After"] == "1"
        assert "http_client_write_queue 1" in refused.get_data(as_text=True)
        beat_answer = beat(client, node_id, secret)  # heartbeats never wait in this line
        assert beat_answer.status_code == 200
        release.set()
        for thread in threads:
            thread.join(10)
        taken = client.put(f"/v1/node/{node_id}/allocations", json=update, headers={"X-Nomad-Token": secret})
        assert taken.status_code == 200
    finally:
        release.set()
        for thread in threads:
            if thread.is_alive() or thread.ident is not None:
                thread.join(10)
        app.extensions["corral"].close()


def test_http_client_turns_sets_how_many_client_writes_hold_a_connection_at_once(database_url: str) -> None:
    """With http_client_turns 1 of a client pool of 4, a second client write waits for the first
    one's turn, and heartbeats are answered from the connections left meanwhile."""
    settings = Settings(database_url=database_url, http_node_pool_size=4, http_client_turns=1)
    app = create_app(settings, database_url)
    client = app.test_client()
    turns = app.extensions["corral"].client_share
    hold, held, release = write_turn_holder(turns)
    holder = threading.Thread(target=hold)
    try:
        node_id, secret = register(client)
        holder.start()
        assert held.wait(10)
        update: dict[str, list[object]] = {"Allocs": []}
        answers: list[int] = []
        path, token = f"/v1/node/{node_id}/allocations", {"X-Nomad-Token": secret}
        waiting = threading.Thread(
            target=lambda: answers.append(client.put(path, json=update, headers=token).status_code)
        )
        waiting.start()
        deadline = time.monotonic() + 10
        while turns.writes_waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert turns.writes_waiting == 1  # the one turn is held: the update waits for it
        for _ in range(3):
            assert beat(client, node_id, secret).status_code == 200
        release.set()
        waiting.join(10)
        assert not waiting.is_alive() and turns.waiting == 0
        assert answers == [200]  # done once the turn came free, not refused
    finally:
        release.set()
        if holder.ident is not None:
            holder.join(10)
        app.extensions["corral"].close()
