"""`alloc stop` locks its allocation, then the job; `job stop -no-shutdown-delay` locks the job's
allocations and the job. On real connections, with the first holding its allocation when the
second starts: both finish, neither is chosen as a deadlock victim."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import libpq_url
from app.jobspec import normalize_job
from app.models import Allocation
from app.store.job.jobs import RegisterOptions, deregister_job, register_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.concurrency


def _waiting_on_a_lock(pg: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = pg.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


def test_job_stop_without_shutdown_delay_and_alloc_stop_take_locks_in_one_order(
    engine: Engine, database_url: str
) -> None:
    spec = normalize_job({"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]})
    with Session(engine) as session, session.begin():
        registered = register_job(session, spec, RegisterOptions())
    url = libpq_url(database_url)
    with psycopg.connect(url, autocommit=True) as setup:
        alloc_id = insert_allocation(setup, insert_node(setup), str(registered.eval_id))
    failures: list[BaseException] = []

    def stop_the_job() -> None:
        try:
            with Session(engine) as session, session.begin():
                deregister_job(session, "default", "web", purge=False, eval_priority=None, no_shutdown_delay=True)
        except BaseException as err:  # reported to the test's thread
            failures.append(err)

    with psycopg.connect(url) as alloc_stop, psycopg.connect(url, autocommit=True) as watch:
        alloc_stop.execute("SET lock_timeout = '20s'")
        alloc_stop.execute("SELECT 1 FROM allocations WHERE id = %s FOR UPDATE", (alloc_id,))  # alloc stop's first lock
        job_stop = threading.Thread(target=stop_the_job)
        job_stop.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_a_lock(watch):
            assert time.monotonic() < deadline, "job stop never reached the allocation's lock"
            time.sleep(0.02)
        # alloc stop's second lock: the job, key-share. Had job stop taken the job first, one of
        # the two would now be a deadlock victim (deadlock_timeout is 1 s).
        alloc_stop.execute("SELECT 1 FROM jobs WHERE namespace = 'default' AND id = 'web' FOR KEY SHARE")
        alloc_stop.commit()
        job_stop.join(30)
    assert not job_stop.is_alive() and failures == []
    with Session(engine) as session:
        alloc = session.get(Allocation, alloc_id)
        assert alloc is not None and (alloc.desired_transition or {}).get("NoShutdownDelay") is True
