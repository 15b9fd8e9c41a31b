"""The state index under concurrent writers: a reader that chains ?index= never misses a commit,
unrelated writers never wait for each other, and the database itself keeps one evaluation per
job in flight."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

from app.api.http.blocking import IndexWatcher, blocking_read
from app.api.http.params import BlockingParams
from app.db.engines import libpq_url, make_sessionmaker
from app.jobspec import normalize_job
from app.models import Job
from app.store.job.jobs import RegisterOptions, register_job
from app.wire.job import JobSpec

pytestmark = pytest.mark.concurrency

WRITERS, JOBS_PER_WRITER = 4, 15


def test_chained_blocking_reads_never_miss_a_commit(engine: Engine, database_url: str) -> None:
    writes = make_sessionmaker(engine)
    reads = make_sessionmaker(engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True))
    watcher = IndexWatcher(database_url)
    done = threading.Event()
    observations: list[tuple[int, frozenset[str]]] = []

    def writer(n: int) -> None:
        for i in range(JOBS_PER_WRITER):
            spec = normalize_job(
                {"ID": f"w{n}-{i}", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}
            )
            with writes() as session, session.begin():
                register_job(session, spec, RegisterOptions())

    def reader() -> None:
        index = 0
        while not done.is_set():
            ids, index = blocking_read(
                reads,
                watcher,
                ["jobs"],
                BlockingParams(index=index, wait_s=0.5),
                lambda s: frozenset(s.scalars(select(Job.id)).all()),
            )
            observations.append((index, ids))

    read_thread = threading.Thread(target=reader)
    read_thread.start()
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(writer, range(WRITERS)))
    with writes() as session:
        final = {job.id: job.job_modify_index for job in session.scalars(select(Job))}
    # Every commit is eventually reported: the chain reaches the last index and sees them all.
    while not observations or observations[-1][0] < max(final.values()):
        time.sleep(0.05)
    done.set()
    read_thread.join(timeout=30)
    watcher.stop()

    assert len(final) == WRITERS * JOBS_PER_WRITER
    assert len(observations) > 1
    for index, seen in observations:
        committed_by_then = {job_id for job_id, at in final.items() if at <= index}
        # Indexes are transaction IDs, not commit order: a snapshot may already hold a change
        # above the index it reports (it is reported again once the index passes it), but never
        # lacks one at or below it.
        assert committed_by_then <= seen, f"at index {index} the reader missed {committed_by_then - seen}"
    assert observations[-1][1] == set(final)
    indexes = [index for index, _ in observations]
    assert indexes == sorted(indexes)


def _spec(job_id: str, priority: int = 50) -> JobSpec:
    group = {"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}
    return normalize_job({"ID": job_id, "Priority": priority, "TaskGroups": [group]})


def _waits_on_a_lock(pg: psycopg.Connection[tuple[object, ...]], pid: int) -> bool:
    row = pg.execute("SELECT cardinality(pg_blocking_pids(%s))", (pid,)).fetchone()
    return row is not None and int(str(row[0])) > 0


def test_unrelated_writers_do_not_wait_and_a_late_lower_index_is_not_missed(engine: Engine, database_url: str) -> None:
    """Writer A registers a job and holds its transaction open after taking its index; writer B
    registers another job meanwhile and must commit without waiting for A (the old '_global'
    row lock made it wait). A blocking reader then sees B's job but reports an index below A's,
    so its chained query still wakes for A's job once A commits: out of index order."""
    writes = make_sessionmaker(engine)
    reads = make_sessionmaker(engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True))
    watcher = IndexWatcher(database_url)
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg, writes() as a:
        with a.begin():
            register_job(a, _spec("held"), RegisterOptions())  # A: index taken, not committed
            held = a.scalars(select(Job.job_modify_index).where(Job.id == "held")).one()
            b_pid: list[int] = []

            def writer_b() -> None:
                with writes() as b, b.begin():
                    b_pid.append(int(b.execute(text("SELECT pg_backend_pid()")).scalar_one()))
                    register_job(b, _spec("free"), RegisterOptions())

            b_thread = threading.Thread(target=writer_b)
            b_thread.start()
            blocked = False
            while b_thread.is_alive() and not blocked:
                blocked = bool(b_pid) and _waits_on_a_lock(pg, b_pid[0])
                time.sleep(0.01)
            if blocked:
                a.rollback()  # let B finish before failing
            b_thread.join()
            assert not blocked, "writer B waited for writer A's open transaction"

            seen, reported = blocking_read(reads, watcher, ["jobs"], BlockingParams(index=None, wait_s=1), _job_ids)
            assert "free" in seen and "held" not in seen
            assert reported < held  # B's index is higher, but A's lower one has not finished

            chained: list[tuple[frozenset[str], int]] = []
            follower = threading.Thread(
                target=lambda: chained.append(
                    blocking_read(reads, watcher, ["jobs"], BlockingParams(index=reported, wait_s=60), _job_ids)
                )
            )
            follower.start()
        follower.join()  # A committed on leaving the block above
    watcher.stop()
    later_seen, later_index = chained[0]
    assert {"held", "free"} <= later_seen
    assert later_index >= held


def _job_ids(session: Session) -> frozenset[str]:
    return frozenset(session.scalars(select(Job.id)).all())


def test_database_allows_one_in_flight_eval_per_job(database_url: str, engine: Engine) -> None:
    spec = normalize_job({"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]})
    writes = make_sessionmaker(engine)
    for _ in range(2):
        with writes() as session, session.begin():
            register_job(session, spec, RegisterOptions())
    url = libpq_url(database_url)
    with psycopg.connect(url) as first, psycopg.connect(url) as second:
        ids = [r[0] for r in first.execute("SELECT id FROM evaluations ORDER BY create_index").fetchall()]
        claim = "UPDATE evaluations SET lease_token = %s, lease_expires_at = now() + interval '60 s' WHERE id = %s"
        first.execute(claim, (uuid.uuid4(), ids[0]))
        # The second claimer blocks on the first's uncommitted index entry, then fails once it commits.
        failure: list[BaseException] = []

        def claim_second() -> None:
            try:
                second.execute(claim, (uuid.uuid4(), ids[1]))
                second.commit()
            except psycopg.errors.UniqueViolation as err:
                failure.append(err)

        racer = threading.Thread(target=claim_second)
        racer.start()
        first.commit()
        racer.join(timeout=30)
        assert len(failure) == 1


def test_two_first_registrations_of_one_job_take_turns(engine: Engine, database_url: str) -> None:
    """No row to lock yet: the per-object lock makes the second registration wait for the first
    and then update the job it created (version 1), instead of inserting it a second time."""
    writes = make_sessionmaker(engine)
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg, writes() as a:
        with a.begin():
            register_job(a, _spec("same"), RegisterOptions())
            b_pid: list[int] = []
            failure: list[BaseException] = []

            def second() -> None:
                try:
                    with writes() as b, b.begin():
                        b_pid.append(int(b.execute(text("SELECT pg_backend_pid()")).scalar_one()))
                        register_job(b, _spec("same", priority=60), RegisterOptions())
                except Exception as err:  # reported below, in the test's thread
                    failure.append(err)

            racer = threading.Thread(target=second)
            racer.start()
            while not (b_pid and _waits_on_a_lock(pg, b_pid[0])):
                assert racer.is_alive(), failure
                time.sleep(0.01)
        racer.join()  # A committed on leaving the block above
        assert failure == []
        assert pg.execute("SELECT version, priority FROM jobs WHERE id = 'same'").fetchone() == (1, 60)
        assert pg.execute("SELECT count(*) FROM evaluations WHERE job_id = 'same'").fetchone() == (2,)
