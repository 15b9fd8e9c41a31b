"""Claims under races and server crashes.

A claim commits without waiting for its WAL flush (see broker._claim_statement). These tests
crash a PostgreSQL server of their own with SIGKILL to show both halves of why that is safe:
a claim the crash takes back leaves the evaluation claimable and its old holder fenced out, and
any synchronous commit after a claim makes the claim durable too."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.embedded import EmbeddedPostgres, server_settings
from app.db.engines import libpq_url, make_engine, make_sessionmaker, sqlalchemy_url, transaction
from app.db.schema import upgrade
from app.jobspec import normalize_job
from app.pipeline import broker
from app.pipeline.broker import LeaseLost, Outcome
from app.store.job.jobs import RegisterOptions, register_job

pytestmark = pytest.mark.concurrency

TYPES = ["service"]


def register(engine: Engine, job_id: str) -> str:
    spec = normalize_job({"ID": job_id, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]})
    with transaction(make_sessionmaker(engine)) as session:
        result = register_job(session, spec, RegisterOptions())
    return str(result.eval_id)


def leases(url: str) -> dict[str, uuid.UUID | None]:
    with psycopg.connect(libpq_url(url)) as conn:
        rows = conn.execute("SELECT id, lease_token FROM evaluations").fetchall()
    return {str(row[0]): row[1] for row in rows}


@pytest.fixture
def crashable(workdir: Path) -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A migrated server of this test's own, so crashing it disturbs no other test. The
    background writer and autovacuum are off: either could write the WAL out early (to write
    the page a claim dirtied, or to commit an ANALYZE)."""
    quiet = {"bgwriter_lru_maxpages": "0", "autovacuum": "off"}
    server = EmbeddedPostgres(workdir, {**server_settings(), **quiet})
    url = sqlalchemy_url(server.start())
    try:
        upgrade(url)
        yield server, url
    finally:
        server.stop()


def wal_flushed(url: str) -> bool:
    """Whether every WAL record inserted so far has reached the disk."""
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn()").fetchone()
    return bool(row and row[0])


def backend_pid(url: str, backend_type: str) -> int:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = %s", (backend_type,)).fetchone()
    assert row is not None, f"no {backend_type} process"
    return int(row[0])


@contextmanager
def wal_writer_frozen_then_crash(url: str) -> Iterator[None]:
    """Stop the WAL writer, the only process that flushes asynchronous commits on an idle
    server, run the block, then SIGKILL it: the postmaster treats that as a crash, resets
    shared memory (and the WAL buffers in it) and recovers from what reached the disk."""
    walwriter = backend_pid(url, "walwriter")
    os.kill(walwriter, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(walwriter, signal.SIGKILL)
        wait_for_recovery(url, walwriter)


def wait_for_recovery(url: str, crashed_walwriter: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if backend_pid(url, "walwriter") != crashed_walwriter:
                return
        except (psycopg.OperationalError, AssertionError):
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not recover from the crash within 60 s")


def claim_through_a_crash(url: str, then: Callable[[Engine], object] = lambda _: None) -> tuple[str, broker.Claim]:
    """Register a job, claim its evaluation while the WAL writer is frozen, run `then`, and
    crash the server."""
    engine = make_engine(url, "worker", pool_size=1, pre_ping=False)
    try:
        eval_id = register(engine, "web")
        with wal_writer_frozen_then_crash(url):
            held = broker.claim(engine, TYPES, "first", 60, rescue=False)
            assert held is not None and str(held.evaluation.id) == eval_id
            assert leases(url) == {eval_id: held.token}  # visible to every other worker at once
            assert not wal_flushed(url), "the claim waited for its WAL flush"
            then(engine)
    finally:
        engine.dispose()
    return eval_id, held


def test_a_claim_lost_in_a_server_crash_leaves_the_evaluation_claimable(
    crashable: tuple[EmbeddedPostgres, str],
) -> None:
    _, url = crashable
    eval_id, held = claim_through_a_crash(url)

    # The claim never reached the disk: the evaluation is pending and unleased again, as if
    # never delivered (Nomad's in-memory broker loses its deliveries the same way).
    assert leases(url) == {eval_id: None}
    engine = make_engine(url, "worker", pool_size=1)
    try:
        with pytest.raises(LeaseLost):
            broker.complete_success(engine, held, Outcome(snapshot_index=0))
        again = broker.claim(engine, TYPES, "second", 60, rescue=False)
        assert again is not None and str(again.evaluation.id) == eval_id
        assert again.token != held.token and again.delivery_count == 1
        broker.complete_success(engine, again, Outcome(snapshot_index=0))
    finally:
        engine.dispose()


def test_a_synchronous_commit_after_a_claim_makes_the_claim_durable(
    crashable: tuple[EmbeddedPostgres, str],
) -> None:
    _, url = crashable
    # Any synchronous commit after the claim, here a job registration.
    eval_id, held = claim_through_a_crash(url, then=lambda engine: register(engine, "other"))

    # WAL is flushed in order: the registration's flush carried the claim before it.
    assert leases(url)[eval_id] == held.token
    engine = make_engine(url, "worker", pool_size=1)
    try:
        broker.complete_success(engine, held, Outcome(snapshot_index=0))
    finally:
        engine.dispose()


def test_a_claim_that_races_for_the_same_job_gets_nothing_and_leaves_its_connection_usable(
    engine: Engine, database_url: str
) -> None:
    """Two evaluations of one job claimed at the same moment: the unique index lets one lease
    win, and the other claim statement fails on it and returns None."""
    first_eval, second_eval = register(engine, "web"), register(engine, "web")
    pool = make_engine(database_url, "worker", pool_size=1)
    outcome: list[broker.Claim | None] = []
    with psycopg.connect(libpq_url(database_url)) as rival:
        rival.execute(
            "UPDATE evaluations SET lease_token = %s, lease_owner = 'rival', "
            "lease_expires_at = now() + interval '60 s' WHERE id = %s",
            (uuid.uuid4(), first_eval),
        )
        racer = threading.Thread(target=lambda: outcome.append(broker.claim(pool, TYPES, "racer", 60, rescue=False)))
        racer.start()
        wait_for_lock_wait(database_url)  # the racer holds the second evaluation, blocked on the index
        rival.commit()
        racer.join(timeout=30)
    try:
        assert outcome == [None]
        assert broker.claim(pool, TYPES, "racer", 60, rescue=False) is None  # the job is in flight
        with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
            conn.execute(
                "UPDATE evaluations SET lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL WHERE id = %s",
                (first_eval,),
            )
        held = broker.claim(pool, TYPES, "racer", 60, rescue=False)
        assert held is not None and str(held.evaluation.id) == first_eval
        assert leases(database_url)[second_eval] is None
    finally:
        pool.dispose()


def wait_for_lock_wait(url: str) -> None:
    deadline = time.monotonic() + 30
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if waiting and waiting[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the racing claim never waited on the rival's lease")


def test_a_batch_claim_that_races_for_a_job_gets_nothing_and_leaves_the_others_claimable(
    engine: Engine, database_url: str
) -> None:
    """A batch claim whose candidates include a job that a rival leases at the same moment:
    the unique index fails the whole statement, so the batch takes nothing (its other
    evaluations stay unleased, claimable by the next claim) and its connection stays usable."""
    first_eval, second_eval = register(engine, "web"), register(engine, "web")
    other = register(engine, "api")
    pool = make_engine(database_url, "worker", pool_size=1)
    outcome: list[list[broker.Claim]] = []
    with psycopg.connect(libpq_url(database_url)) as rival:
        rival.execute(
            "UPDATE evaluations SET lease_token = %s, lease_owner = 'rival', "
            "lease_expires_at = now() + interval '60 s' WHERE id = %s",
            (uuid.uuid4(), first_eval),
        )
        racer = threading.Thread(target=lambda: outcome.append(broker.claim_batch(pool, TYPES, "racer", 60, 8)))
        racer.start()
        wait_for_lock_wait(database_url)  # the racer holds web's second evaluation, blocked on the index
        rival.commit()
        racer.join(timeout=30)
    try:
        assert outcome == [[]]
        assert leases(database_url)[other] is None and leases(database_url)[second_eval] is None
        again = broker.claim_batch(pool, TYPES, "racer", 60, 8)
        assert [str(c.evaluation.id) for c in again] == [other]  # web is in flight: only api's
    finally:
        pool.dispose()


def test_racing_batch_claims_lease_each_job_once(engine: Engine, database_url: str) -> None:
    """Six threads claim batches of four at once from 30 jobs with two pending evaluations each:
    no evaluation is claimed twice, and no job has two evaluations leased."""
    for i in range(30):
        register(engine, f"job{i}")
        register(engine, f"job{i}")
    pool = make_engine(database_url, "worker", pool_size=6)
    claimed: list[broker.Claim] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def claimer(name: str) -> None:
        start.wait()
        for _ in range(20):
            got = broker.claim_batch(pool, TYPES, name, 60, 4)
            with lock:
                claimed.extend(got)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(6)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        ids = [str(c.evaluation.id) for c in claimed]
        assert len(ids) == len(set(ids))
        jobs = [c.evaluation.job_id for c in claimed]
        assert sorted(jobs) == sorted(f"job{i}" for i in range(30))  # every job once, none twice
        held = {k: v for k, v in leases(database_url).items() if v is not None}
        assert held == {str(c.evaluation.id): c.token for c in claimed}
    finally:
        pool.dispose()
