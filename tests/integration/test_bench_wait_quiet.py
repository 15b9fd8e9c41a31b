"""The benchmarks' end-of-run poll (bench.storm.wait_quiet): done only when no evaluation (but a
delayed follow-up) and no plan is pending, on one connection for the whole wait."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from sqlalchemy import Engine

from bench.storm import wait_quiet
from tests.support.pipeline import register

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_quiet_once_nothing_is_pending(engine: Engine, pg: Conn, database_url: str) -> None:
    eval_id = register(engine, "job-000")
    with pytest.raises(RuntimeError, match="did not quiet down"):
        wait_quiet(database_url, limit_s=0.3)
    pg.execute("UPDATE evaluations SET triggered_by = 'failed-follow-up' WHERE id = %s", (eval_id,))
    assert wait_quiet(database_url, limit_s=5) < 1  # a delayed follow-up is not work left


def test_waits_for_the_last_pending_evaluation_on_one_connection(engine: Engine, pg: Conn, database_url: str) -> None:
    eval_id = register(engine, "job-000")

    def finish_later() -> None:
        time.sleep(0.5)
        pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (eval_id,))

    sessions = pg.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
    finisher = threading.Thread(target=finish_later)
    finisher.start()
    waited = wait_quiet(database_url, limit_s=10)
    finisher.join()
    after = pg.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
    assert sessions is not None and after is not None
    assert waited >= 0.5
    # About five polls in that half second, one session: the polls do not connect each time.
    assert int(str(after[0])) - int(str(sessions[0])) <= 1
