"""Taking over a role from a holder that stopped renewing ends that holder's session, and only it."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import Engine, text

from app.db.engines import libpq_url
from app.db.leadership import Leadership, lock_key

pytestmark = pytest.mark.integration


def make_stale(engine: Engine, role: str, pid: int) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO leader_terms (role, term, holder, holder_backend_pid, acquired_at, renewed_at) "
                "VALUES (:role, 7, 'gone:1', :pid, now() - interval '1 hour', now() - interval '1 hour') "
                "ON CONFLICT (role) DO UPDATE SET holder_backend_pid = :pid, renewed_at = now() - interval '1 hour'"
            ),
            {"role": role, "pid": pid},
        )


def test_the_session_holding_the_lock_is_ended(engine: Engine, database_url: str) -> None:
    with psycopg.connect(libpq_url(database_url), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key("applier"),))
        pid = holder.info.backend_pid
        make_stale(engine, "applier", pid + 100_000)  # the recorded pid is not the holder's
        standby = Leadership(engine, "applier")
        try:
            assert not standby.try_acquire()  # evicts the holder found in pg_locks
            with pytest.raises(psycopg.OperationalError):
                holder.execute("SELECT 1")
            assert standby.try_acquire() and standby.term == 8
        finally:
            standby.close()


def test_an_unrelated_session_with_the_recorded_pid_is_left_alone(engine: Engine, database_url: str) -> None:
    # After a failover the recorded pid names a backend of the dead server; on the new primary
    # the same number may be anyone's session. Nobody holds the lock here: nothing is ended.
    with psycopg.connect(libpq_url(database_url), autocommit=True) as bystander:
        make_stale(engine, "leader", bystander.info.backend_pid)
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": lock_key("leader")})
            conn.commit()
            other = Leadership(engine, "leader")
            try:
                # Our own lock is held by `conn`, so the standby cannot take it and looks for a
                # stale holder: it must end `conn`'s session, never the bystander's.
                assert not other.try_acquire()
            finally:
                other.close()
        assert bystander.execute("SELECT 1").fetchone() == (1,)
