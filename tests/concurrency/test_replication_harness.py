"""The replicated-PostgreSQL harness itself: a write acknowledged by the primary survives its
SIGKILL once the synchronous standby is promoted, and a multi-host URL with
target_session_attrs=read-write reaches whichever node is the primary, for psycopg, SQLAlchemy
and Alembic alike."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import text

from app.db.engines import libpq_url, make_engine
from app.db.schema import upgrade
from bench.replication import Replicated, replicated_postgres

pytestmark = pytest.mark.concurrency


@pytest.fixture
def replicated() -> Iterator[Replicated]:
    with replicated_postgres() as cluster:
        yield cluster


def test_acknowledged_writes_survive_a_failover_and_the_url_follows_the_primary(replicated: Replicated) -> None:
    old, standby = replicated.nodes
    upgrade(replicated.sqlalchemy_url)  # Alembic through the multi-host URL
    with psycopg.connect(libpq_url(replicated.url), autocommit=True) as conn:
        conn.execute("CREATE TABLE acked (n int PRIMARY KEY)")
        for n in range(200):
            conn.execute("INSERT INTO acked VALUES (%s)", (n,))  # each commit waits for the standby
        row = conn.execute("SELECT inet_server_port()").fetchone()
        assert row is not None and row[0] == old.port

    old.kill9()
    replicated.promote(standby)
    assert replicated.primary() is standby

    with psycopg.connect(libpq_url(replicated.url), autocommit=True) as conn:
        row = conn.execute("SELECT inet_server_port(), count(*) FROM acked").fetchone()
        assert row == (standby.port, 200)
    engine = make_engine(replicated.sqlalchemy_url, "test")
    try:
        with engine.begin() as conn:
            assert conn.execute(text("SELECT inet_server_port()")).scalar_one() == standby.port
            conn.execute(text("INSERT INTO acked VALUES (200)"))
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    finally:
        engine.dispose()


def test_a_new_standby_can_follow_the_promoted_primary(replicated: Replicated) -> None:
    old, first = replicated.nodes
    old.kill9()
    replicated.promote(first)
    second = replicated.add_standby("pg2")
    with psycopg.connect(first.admin_url("corral"), autocommit=True) as conn:
        conn.execute("CREATE TABLE t (n int)")
        conn.execute("INSERT INTO t VALUES (1)")
    replicated.wait_replayed(second)
    with psycopg.connect(second.admin_url("corral"), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM t").fetchone()
        assert row == (1,)
