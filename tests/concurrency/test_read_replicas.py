"""Reads from a hot standby (CORRAL_READ_DATABASE_URL, issue 22) on a real primary and streaming
standby (bench/replication.py): the standby's safe index is as sound as the primary's, a read
never answers with an index older than the one the client sent (it waits for replay or the
primary answers), a blocking query served by the standby wakes after a write on the primary,
writes and ACL token lookups go to the primary. And a write whose COMMIT the synchronous
standby never confirms (its wait cancelled by the API's statement_timeout) is a 503, not a 200."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import psycopg
import pytest
from flask import Flask, g
from werkzeug.test import TestResponse

from app import create_app
from app.api.http.replicas import Source
from app.db.engines import ROLE_TIMEOUTS
from app.db.schema import upgrade
from app.settings.config import Settings
from bench.replication import DATABASE, Replicated, replicated_postgres
from tests.support.api import json_body, node_body
from tests.support.processes import wait_for

pytestmark = pytest.mark.concurrency
LIVENESS_S = 60.0  # a bound for a hang only: a woken blocking query returns in well under a second


def job(job_id: str) -> dict[str, Any]:
    return {"Job": {"ID": job_id, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


@pytest.fixture(scope="module")
def replicated() -> Iterator[Replicated]:
    with replicated_postgres() as cluster:
        upgrade(cluster.sqlalchemy_url)
        yield cluster


def read_url(cluster: Replicated) -> str:
    """Every node, the standby preferred: the form an operator would give."""
    hosts = ",".join(node.address for node in cluster.nodes)
    return f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=prefer-standby"


@contextmanager
def api(cluster: Replicated, replay_wait_s: float = 0.3, **settings: Any) -> Iterator[Flask]:
    app = create_app(
        Settings(
            database_url=cluster.url,
            read_database_url=read_url(cluster),
            read_replay_wait_s=replay_wait_s,
            max_blocking_wait_s=LIVENESS_S,
            **settings,
        ),
        cluster.url,
    )
    try:
        yield app
    finally:
        app.extensions["corral"].close()


def get(app: Flask, path: str, **kwargs: Any) -> tuple[TestResponse, Source | None]:
    """The answer and, when the standby gave it, what it said about itself."""
    with app.test_client() as client:
        response = client.get(path, **kwargs)
        return response, g.get("corral_read_source")


def index_of(response: TestResponse) -> int:
    assert response.status_code == 200, response.get_data(as_text=True)
    return int(response.headers["X-Nomad-Index"])


@contextmanager
def replay_paused(cluster: Replicated) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """The standby keeps receiving (and flushing, so synchronous commits go on) but replays
    nothing: it falls behind the primary until the block ends."""
    [standby] = cluster.standbys()
    with psycopg.connect(standby.admin_url(), autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            yield conn
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def test_a_hot_standby_counts_a_transaction_open_on_the_primary_as_running(replicated: Replicated) -> None:
    """The safe index (snapshot xmin - 1) read on the standby stays below the index of a
    transaction still open on the primary, though a later one has committed and replayed."""
    [standby] = replicated.standbys()
    primary = replicated.primary()
    with psycopg.connect(primary.admin_url(DATABASE), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS probe (n bigint)")
    with (
        psycopg.connect(primary.admin_url(DATABASE)) as open_tx,
        psycopg.connect(primary.admin_url(DATABASE), autocommit=True) as later,
        psycopg.connect(standby.admin_url(DATABASE), autocommit=True) as reader,
    ):
        open_index = open_tx.execute("INSERT INTO probe VALUES (1) RETURNING state_index_own()").fetchone()
        later_index = later.execute("INSERT INTO probe VALUES (2) RETURNING state_index_own()").fetchone()
        assert open_index is not None and later_index is not None and later_index[0] > open_index[0]
        replicated.wait_replayed(standby)
        safe = reader.execute("SELECT state_index_safe()").fetchone()
        assert safe is not None and safe[0] < open_index[0]
        open_tx.commit()
        replicated.wait_replayed(standby)
        safe = reader.execute("SELECT state_index_safe()").fetchone()
        assert safe is not None and safe[0] >= later_index[0]


def test_a_read_never_answers_older_than_the_index_the_client_sent(replicated: Replicated) -> None:
    with api(replicated) as app, replay_paused(replicated):
        client = app.test_client()
        assert client.put("/v1/jobs", json=job("behind")).status_code == 200
        # No index and no ?stale: the client may have just written, so the primary answers.
        fresh, source = get(app, "/v1/jobs")
        seen = index_of(fresh)
        assert source is None and "behind" in [j["ID"] for j in fresh.json or []]
        # ?stale: the standby answers whatever it has replayed, and says how far behind it is.
        stale, source = get(app, "/v1/jobs?stale")
        assert source is not None and index_of(stale) < seen
        assert "behind" not in [j["ID"] for j in stale.json or []]
        assert int(stale.headers["X-Nomad-LastContact"]) > 0
        # The client has seen `seen`; the standby's snapshot is older, so after the bounded wait
        # for replay the primary answers (nothing changes: at the end of the wait, with `seen`).
        same, source = get(app, f"/v1/jobs?index={seen}&wait=1s")
        assert source is None and index_of(same) >= seen
        assert same.headers["X-Nomad-LastContact"] == "0"
        # Asked for a change past seen - 1, which the standby's snapshot is complete up to: it
        # starts waiting there, but the primary has the change and the standby does not replay
        # it, so the query goes to the primary rather than wait out its 30 s.
        caught_up, source = get(app, f"/v1/jobs?index={seen - 1}&wait=30s")
        assert source is None and index_of(caught_up) >= seen
        assert "behind" in [j["ID"] for j in caught_up.json or []]


def test_a_read_waits_for_the_standby_to_replay_past_the_client(replicated: Replicated) -> None:
    with api(replicated, replay_wait_s=LIVENESS_S) as app:
        client = app.test_client()
        with replay_paused(replicated):
            assert client.put("/v1/jobs", json=job("waited")).status_code == 200
            seen = index_of(get(app, "/v1/jobs")[0])
            answers: list[tuple[TestResponse, Source | None]] = []
            # A short wait: were the standby's older snapshot used, the query would end with its
            # older index after 1 s, while replay is still paused.
            reader = threading.Thread(target=lambda: answers.append(get(app, f"/v1/jobs?index={seen}&wait=1s")))
            reader.start()
            time.sleep(1.5)  # the read is waiting for replay (however late it started, the answer is right)
        reader.join(LIVENESS_S)
        [(answer, source)] = answers
        assert source is not None, "the standby answers once it has replayed past the client"
        assert index_of(answer) >= seen and "waited" in [j["ID"] for j in answer.json or []]


def test_a_blocking_query_on_the_standby_wakes_after_a_write_on_the_primary(replicated: Replicated) -> None:
    with api(replicated) as app:
        client = app.test_client()
        assert client.put("/v1/jobs", json=job("first")).status_code == 200
        seen = index_of(get(app, "/v1/jobs")[0])
        answers: list[tuple[TestResponse, Source | None]] = []
        path = f"/v1/jobs?index={seen}&wait={int(LIVENESS_S)}s"
        waiter = threading.Thread(target=lambda: answers.append(get(app, path)))
        waiter.start()
        time.sleep(0.5)  # let it block (if it has not yet, it sees the write at once: same answer)
        assert client.put("/v1/jobs", json=job("second")).status_code == 200
        waiter.join(LIVENESS_S)
        assert not waiter.is_alive(), "the blocking query on the standby never woke up"
        [(answer, source)] = answers
        assert source is not None and source.known_leader
        assert index_of(answer) > seen and "second" in [j["ID"] for j in answer.json or []]
        assert answer.headers["X-Nomad-KnownLeader"] == "true"


def test_a_nodes_allocation_query_on_the_standby_wakes_for_its_node(replicated: Replicated) -> None:
    """The client lane's per-node wait (every client holds one) tracks node changes on the standby."""
    with api(replicated) as app:
        client = app.test_client()
        node_id = str(uuid.uuid4())
        assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
        seen = index_of(get(app, f"/v1/node/{node_id}/allocations")[0])
        answers: list[tuple[TestResponse, Source | None]] = []
        path = f"/v1/node/{node_id}/allocations?index={seen}&wait={int(LIVENESS_S)}s"
        waiter = threading.Thread(target=lambda: answers.append(get(app, path)))
        waiter.start()
        time.sleep(0.5)  # let it block (if it has not yet, it sees the change at once: same answer)
        assert client.put(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "ineligible"}).status_code == 200
        waiter.join(LIVENESS_S)
        assert not waiter.is_alive(), "the node's query on the standby never woke up"
        [(answer, source)] = answers
        assert source is not None and index_of(answer) > seen


def test_writes_and_token_lookups_go_to_the_primary(replicated: Replicated) -> None:
    primary = replicated.primary()
    with api(replicated, acl_enabled=True) as app, replay_paused(replicated):
        client = app.test_client()
        # Bootstrapped and created while the standby replays nothing: only the primary has them.
        root = client.post("/v1/acl/bootstrap")
        assert root.status_code == 200, root.get_data(as_text=True)
        headers = {"X-Nomad-Token": json_body(root)["SecretID"]}
        assert client.put("/v1/jobs", json=job("written"), headers=headers).status_code == 200
        with psycopg.connect(primary.admin_url(DATABASE), autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM jobs WHERE id = 'written'").fetchone()
            assert row == (1,)
        # The token is not on the standby yet, yet a ?stale read (answered by the standby)
        # is authorized: the token was looked up on the primary.
        answer, source = get(app, "/v1/jobs?stale", headers=headers)
        assert answer.status_code == 200 and source is not None
        assert "written" not in [j["ID"] for j in answer.json or []]


def test_a_bad_stale_value_is_a_400_naming_it(replicated: Replicated) -> None:
    with api(replicated) as app:
        answer, _ = get(app, "/v1/jobs?stale=maybe")
        assert answer.status_code == 400 and "stale" in answer.get_data(as_text=True)


@contextmanager
def standby_frozen(cluster: Replicated) -> Iterator[None]:
    """SIGSTOP every process of the standby (its WAL receiver with them): a commit on the
    primary waits for a confirmation that does not come until the block ends."""
    primary, [standby] = cluster.primary(), cluster.standbys()
    pid = standby.postmaster_pid()
    assert pid is not None
    postmaster = psutil.Process(pid)
    processes = [postmaster, *postmaster.children(recursive=True)]
    for process in processes:
        # A short-lived child (a backend ending, an autovacuum worker) may be gone by now.
        with contextlib.suppress(psutil.NoSuchProcess):
            process.suspend()
    try:
        yield
    finally:
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.resume()
        cluster.wait_sync(primary, standby)


def test_a_commit_whose_wait_for_the_standby_is_cancelled_is_a_503_not_a_success(replicated: Replicated) -> None:
    """COMMIT waits for the synchronous standby's confirmation however long it takes: the API's
    statement_timeout does not end that wait (PostgreSQL stops the statement timer before the
    commit itself). A cancel does (an operator's pg_cancel_backend, a shutdown): PostgreSQL then
    reports the commit done, with a WARNING, though no standby has it. The client must not hear
    200 for a write a failover would lose."""
    primary = replicated.primary()
    app = create_app(Settings(database_url=replicated.url), replicated.url)
    answers: list[TestResponse] = []
    try:
        with standby_frozen(replicated), psycopg.connect(primary.admin_url(DATABASE), autocommit=True) as admin:
            writer = threading.Thread(
                target=lambda: answers.append(app.test_client().put("/v1/jobs", json=job("unconfirmed")))
            )
            writer.start()
            waiting = (
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'corral-api' AND wait_event = 'SyncRep'"
            )
            assert wait_for(lambda: admin.execute(waiting).fetchone() is not None, LIVENESS_S)
            time.sleep(ROLE_TIMEOUTS["api"].statement_ms / 1000 + 1)
            row = admin.execute(waiting).fetchone()
            assert row is not None, "the commit stopped waiting for the standby at statement_timeout"
            admin.execute("SELECT pg_cancel_backend(%s)", (row[0],))
            writer.join(LIVENESS_S)
        [answer] = answers
        assert answer.status_code == 503, answer.get_data(as_text=True)
        assert answer.json is not None and answer.json.get("title") == "Commit Outcome Unknown"
        assert "synchronous standby" in answer.get_data(as_text=True)
        # Committed on the primary all the same: reading it back is how the client finds out.
        with psycopg.connect(primary.admin_url(DATABASE), autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM jobs WHERE id = 'unconfirmed'").fetchone() == (1,)
    finally:
        app.extensions["corral"].close()
