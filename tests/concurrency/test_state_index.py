"""The state index under concurrent writers: a reader that chains ?index= never misses a commit,
and the database itself keeps one evaluation per job in flight."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from sqlalchemy import Engine, select

from app.api.blocking import IndexWatcher, blocking_read
from app.api.params import BlockingParams
from app.db.engines import libpq_url, make_sessionmaker
from app.jobspec import normalize_job
from app.models import Job
from app.store.jobs import RegisterOptions, register_job

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
    done.set()
    read_thread.join(timeout=30)
    watcher.stop()

    with writes() as session:
        final = {job.id: job.job_modify_index for job in session.scalars(select(Job))}
    assert len(final) == WRITERS * JOBS_PER_WRITER
    assert len(observations) > 1
    for index, seen in observations:
        committed_by_then = {job_id for job_id, at in final.items() if at <= index}
        assert committed_by_then == seen, f"at index {index} the reader missed {committed_by_then - seen}"
    indexes = [index for index, _ in observations]
    assert indexes == sorted(indexes)


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
