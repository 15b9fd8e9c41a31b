"""Leader duties recover on the first tick after a Postgres crash (issue 23). A crash empties the
UNLOGGED heartbeat table; the node-lifecycle tick then grants every live node the failover TTL,
a write, and a drain step due in the same tick used to find its state index no longer the
transaction's first write ('next_index must be the first write of the transaction') on every
tick until the clients had heartbeated again. On a Postgres of this test's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.orm import Session

from app.db.engines import libpq_url, make_engine
from app.leader.node_lifecycle import node_lifecycle
from tests.support.own_postgres import OwnPostgres, own_postgres
from tests.support.rows import insert_node

pytestmark = pytest.mark.concurrency


@pytest.fixture
def postgres(workdir: Path) -> Iterator[OwnPostgres]:
    with own_postgres(workdir) as pg:
        yield pg


def tick(url: str) -> int:
    engine = make_engine(url, "leader", pool_size=1)
    try:
        with Session(bind=engine) as session, session.begin():
            return node_lifecycle(session)
    finally:
        engine.dispose()


def test_the_node_lifecycle_tick_after_a_postgres_crash_completes_a_due_drain(postgres: OwnPostgres) -> None:
    with psycopg.connect(libpq_url(postgres.url), autocommit=True) as pg:
        node_id = insert_node(pg)
        pg.execute(
            "INSERT INTO node_heartbeats (node_id, last_seen_at, ttl_ms, expires_at) "
            "VALUES (%s, now(), 60000, now() + interval '60 s')",
            (node_id,),
        )
        # A drain with nothing left to move: its next step (completing it) is due now.
        strategy = {"DrainSpec": {"Deadline": 3_600_000_000_000}, "ForceDeadline": 0}
        pg.execute(
            "UPDATE nodes SET drain_strategy = %s, scheduling_eligibility = 'ineligible' WHERE id = %s",
            (json.dumps(strategy), node_id),
        )
        pg.execute("CHECKPOINT")  # the rows above survive the crash
    # The victim is a session held open for it: another one might end before the kill lands.
    victim = psycopg.connect(libpq_url(postgres.url), autocommit=True)
    row = victim.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    postgres.crash_backend(int(str(row[0])))
    victim.close()
    assert postgres.wait_ready(60)

    with psycopg.connect(libpq_url(postgres.url), autocommit=True) as pg:
        assert pg.execute("SELECT count(*) FROM node_heartbeats").fetchone() == (0,), "crash recovery ran"
        assert tick(postgres.url) == 1  # the first tick after the crash completes the drain
        assert pg.execute("SELECT drain, last_drain->>'Status' FROM nodes").fetchone() == (False, "complete")
        assert pg.execute("SELECT count(*) FROM node_heartbeats").fetchone() == (1,)  # failover TTL granted
