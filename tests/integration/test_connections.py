"""Every connection names its role and carries that role's timeouts; the API's pools ping only
connections that sat idle."""

from __future__ import annotations

import time

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError

from app.db.engines import ROLE_TIMEOUTS, make_engine

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("role", ["api", "worker", "applier", "leader", "migrate"])
def test_role_settings_reach_the_server(database_url: str, role: str) -> None:
    engine = make_engine(database_url, role, pool_size=1)
    limits = ROLE_TIMEOUTS[role]
    with engine.connect() as conn:
        settings = {
            name: setting
            for name, setting in conn.execute(
                text(
                    "SELECT name, setting FROM pg_settings WHERE name IN ('application_name', 'statement_timeout', "
                    "'lock_timeout', 'idle_in_transaction_session_timeout', 'TimeZone')"
                )
            ).all()
        }
    engine.dispose()
    assert settings == {
        "application_name": f"corral-{role}",
        "statement_timeout": str(limits.statement_ms),
        "lock_timeout": str(limits.lock_ms),
        "idle_in_transaction_session_timeout": str(limits.idle_in_transaction_ms),
        "TimeZone": "UTC",
    }


def test_api_statement_timeout_cancels_a_runaway_query(database_url: str) -> None:
    engine = make_engine(database_url, "api", pool_size=1)
    with engine.connect() as conn, pytest.raises(Exception, match="statement timeout"):
        conn.execute(text("SELECT pg_sleep(30)"))
    engine.dispose()


def _pinged(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The pings `engine` sends from now on."""
    pings: list[object] = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: DBAPIConnection) -> bool:
        pings.append(dbapi_connection)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def _backend(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(pg: psycopg.Connection[tuple[object, ...]], pid: int) -> None:
    pg.execute("SELECT pg_terminate_backend(%s)", (pid,))
    deadline = time.monotonic() + 30
    while pg.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is not None:
        assert time.monotonic() < deadline, "the backend outlived its termination"
        time.sleep(0.05)


def test_a_connection_used_a_moment_ago_is_not_pinged(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's pools: no round trip per checkout under load (app.db.engines.ping_after_idle)."""
    engine = make_engine(database_url, "api", pool_size=1, ping_after_idle_s=3600)
    pings = _pinged(engine, monkeypatch)
    try:
        assert _backend(engine) == _backend(engine) == _backend(engine)  # one pooled connection, reused
        assert pings == []
    finally:
        engine.dispose()


def test_a_connection_idle_past_the_limit_is_pinged_and_replaced_when_dead(
    database_url: str, monkeypatch: pytest.MonkeyPatch, pg: psycopg.Connection[tuple[object, ...]]
) -> None:
    engine = make_engine(database_url, "api", pool_size=1, ping_after_idle_s=0)
    pings = _pinged(engine, monkeypatch)
    try:
        first = _backend(engine)  # a fresh connection: no ping
        assert pings == []
        assert _backend(engine) == first and len(pings) == 1
        _terminate(pg, first)
        assert _backend(engine) != first  # the ping found it dead: a new one, and no error
        assert len(pings) == 2
    finally:
        engine.dispose()


def test_a_connection_that_died_within_the_limit_fails_its_request_once(
    database_url: str, pg: psycopg.Connection[tuple[object, ...]]
) -> None:
    """The price of not pinging: the request that finds it dead fails (the API answers 503),
    and the pool is renewed for the next one."""
    engine = make_engine(database_url, "api", pool_size=1, ping_after_idle_s=3600)
    try:
        first = _backend(engine)
        _terminate(pg, first)
        with pytest.raises(DBAPIError) as failed:
            _backend(engine)
        assert failed.value.connection_invalidated
        assert _backend(engine) != first
    finally:
        engine.dispose()
