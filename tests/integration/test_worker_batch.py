"""A worker loop claims several ready evaluations at once (eval_batch) and takes them through
their first try together: one claim statement, one snapshot transaction, one submit, one wait.
Each is then settled on its own; one the batch cannot carry goes the one-at-a-time way."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import make_sessionmaker, transaction
from app.db.leadership import Leadership
from app.gc.core_evals import enqueue_forced
from app.pipeline import broker, plans
from app.pipeline.plan_apply.applier import apply_next
from app.pipeline.snapshot import SnapshotLoader
from app.scheduler import stream as scheduled
from app.settings.config import Settings
from tests.support.pipeline import TYPES, handling, register, register_mock_job
from tests.support.rows import insert_node
from workers import batch
from workers import worker as worker_module
from workers.worker import ALL_SCHEDULERS, Worker

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def claim_batch(engine: Engine, size: int = 8) -> list[broker.Claim]:
    return broker.claim_batch(engine, TYPES, "test-worker", 60, size)


def mock_nodes(pg: Conn, count: int, cpu: int = 2000) -> None:
    for i in range(count):
        insert_node(pg, name=f"n{i}", cpu=cpu)
    pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")


def status(pg: Conn, eval_id: object) -> tuple[Any, ...]:
    row = pg.execute(
        "SELECT status, lease_token IS NULL, status_description FROM evaluations WHERE id = %s", (str(eval_id),)
    ).fetchone()
    assert row is not None
    return row


@contextmanager
def batch_handled(
    engine: Engine,
    database_url: str,
    claims: list[broker.Claim],
    stop: threading.Event | None = None,
    poll_s: float = 60,
) -> Iterator[tuple[threading.Thread, Leadership]]:
    """A real worker handling `claims` as one batch; the applier role held here for the caller
    to apply with. The worker polls only every `poll_s`: by default once a minute, so a verdict
    it waited for in vain shows as a hang."""
    settings = Settings(database_url=database_url, poll_interval_s=poll_s)
    with handling(engine, database_url, claims, settings, stop) as handled:
        yield handled


def apply_until_done(thread: threading.Thread, lead: Leadership, before: Callable[[], None] = lambda: None) -> None:
    deadline = time.monotonic() + 30  # a hang, not a speed
    assert lead.term is not None
    while thread.is_alive():
        assert time.monotonic() < deadline, "the worker is still waiting"
        before()
        with Session(bind=lead.connection) as session, session.begin():
            if apply_next(session, lead.term) is None:
                thread.join(0.02)


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_batch_claim_leases_the_best_pending_evaluation_of_each_job_once(engine: Engine, pg: Conn) -> None:
    low = register(engine, "low", priority=20)
    high = register(engine, "high", priority=80)
    first = register(engine, "web")
    register(engine, "web")  # a second pending evaluation of the same job, newer: not claimed with the first
    claims = claim_batch(engine)
    assert [str(c.evaluation.id) for c in claims] == [high, first, low]  # priority, then age
    assert len({c.token for c in claims}) == 3
    leased = pg.execute("SELECT id::text, lease_token FROM evaluations WHERE lease_token IS NOT NULL").fetchall()
    assert {row[0]: row[1] for row in leased} == {str(c.evaluation.id): c.token for c in claims}
    assert all(c.delivery_count == 1 for c in claims)
    assert claim_batch(engine) == []  # web's other evaluation waits while the first is in flight


def test_a_batch_claim_takes_at_most_its_size_and_nothing_while_the_broker_is_paused(engine: Engine, pg: Conn) -> None:
    for i in range(3):
        register(engine, f"job{i}")
    pg.execute("UPDATE scheduler_config SET pause_eval_broker = true")
    assert claim_batch(engine) == []
    pg.execute("UPDATE scheduler_config SET pause_eval_broker = false")
    assert len(claim_batch(engine, size=2)) == 2
    assert len(claim_batch(engine, size=2)) == 1


def test_a_batch_snapshot_reads_what_each_evaluation_reads_alone(engine: Engine, pg: Conn) -> None:
    mock_nodes(pg, 3)
    for name in ("a", "b"):
        register_mock_job(engine, name, count=2, cpu=100)
    claims = claim_batch(engine)
    together = SnapshotLoader(engine).load_batch([c.evaluation for c in claims])
    alone = [SnapshotLoader(engine).load(c.evaluation) for c in claims]
    for t, a in zip(together, alone, strict=True):
        assert (t.index, t.job, t.allocations, t.job_versions, t.config, t.deployment) == (
            a.index,
            a.job,
            a.allocations,
            a.job_versions,
            a.config,
            a.deployment,
        )
        assert dict(t.usage) == dict(a.usage) and list(t.nodes) == list(a.nodes)
    assert together[0].job is not None and together[0].job.id == claims[0].evaluation.job_id


def test_a_batch_is_read_once_submitted_once_and_completed_by_the_applier(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mock_nodes(pg, 4)
    eval_ids = [register_mock_job(engine, f"web{i}", count=3, cpu=100) for i in range(4)]
    reads = counting(monkeypatch, SnapshotLoader, "load_batch")
    singles = counting(monkeypatch, plans, "submit")
    verdict_reads = counting(monkeypatch, plans, "result")
    claims = claim_batch(engine)
    assert len(claims) == 4
    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead)
    assert len(reads) == 1 and singles == [] and verdict_reads == []
    for eval_id in eval_ids:
        assert status(pg, eval_id)[:2] == ("complete", True)
    placed = pg.execute("SELECT job_id, count(*) FROM allocations GROUP BY job_id ORDER BY job_id").fetchall()
    assert placed == [(f"web{i}", 3) for i in range(4)]
    plan_rows = pg.execute("SELECT count(*), count(*) FILTER (WHERE attempt = 1) FROM plans").fetchone()
    assert plan_rows == (4, 4)


def test_a_later_plan_of_the_batch_leaves_the_room_an_earlier_one_took(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    """One node with room for one of two batch jobs: the second pass sees the first's placement
    and plans nothing (it is blocked), instead of a plan the applier would refuse."""
    mock_nodes(pg, 1, cpu=1000)
    first = register_mock_job(engine, "first", count=1, cpu=800, job_type="batch")
    second = register_mock_job(engine, "second", count=1, cpu=800, job_type="batch")
    claims = claim_batch(engine)
    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead)
    assert status(pg, first)[0] == "complete"
    assert status(pg, second)[0] == "complete"
    assert pg.execute("SELECT count(*) FROM plans WHERE eval_id = %s", (second,)).fetchone() == (0,)
    blocked = pg.execute("SELECT job_id FROM evaluations WHERE status = 'blocked'").fetchall()
    assert blocked == [("second",)]


def test_a_pass_that_fails_in_a_batch_is_nacked_alone_and_the_others_complete(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mock_nodes(pg, 2)
    good = register_mock_job(engine, "good", count=1, cpu=100)
    bad = register_mock_job(engine, "bad", count=1, cpu=100)

    def failing(real: Any) -> Any:
        def stream(ev: Any, *args: Any, **kwargs: Any) -> Any:
            if ev.job_id == "bad":
                raise RuntimeError("this job's pass fails")
            return real(ev, *args, **kwargs)

        return stream

    monkeypatch.setattr(batch, "stream", failing(scheduled))
    monkeypatch.setattr(worker_module, "stream", failing(scheduled))
    claims = claim_batch(engine)
    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead)
    assert status(pg, good)[:2] == ("complete", True)
    state, unleased, description = status(pg, bad)
    assert (state, unleased) == ("pending", True)
    assert "this job's pass fails" in description


def test_a_batch_stopped_while_waiting_gives_every_evaluation_back(engine: Engine, pg: Conn, database_url: str) -> None:
    mock_nodes(pg, 2)
    eval_ids = [register_mock_job(engine, f"web{i}", count=1, cpu=100) for i in range(3)]
    claims = claim_batch(engine)
    stop = threading.Event()
    # The worker sees the stop when its wait ends: at its poll interval, here a short one.
    with batch_handled(engine, database_url, claims, stop, poll_s=0.2) as (thread, _lead):
        deadline = time.monotonic() + 30
        while pg.execute("SELECT count(*) FROM plans").fetchone() != (3,):
            assert time.monotonic() < deadline, "the batch's plans were never submitted"
            time.sleep(0.02)
        stop.set()  # nothing applies them: the worker waits until told to stop
        thread.join(30)
    for eval_id in eval_ids:
        state, unleased, description = status(pg, eval_id)
        assert (state, unleased) == ("pending", True)
        assert "ShuttingDown" in description


def test_a_batch_evaluation_whose_lease_moved_on_is_left_to_its_new_owner(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    mock_nodes(pg, 2)
    kept = register_mock_job(engine, "kept", count=1, cpu=100)
    taken = register_mock_job(engine, "taken", count=1, cpu=100)
    claims = claim_batch(engine)
    other_token = uuid.uuid4()

    def take_over() -> None:  # once its plan is in, another worker takes the lease: the applier fences it
        if pg.execute("SELECT count(*) FROM plans").fetchone() == (2,):
            pg.execute("UPDATE evaluations SET lease_token = %s WHERE id = %s", (other_token, taken))

    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead, take_over)
    assert status(pg, kept)[:2] == ("complete", True)
    row = pg.execute("SELECT status, lease_token FROM evaluations WHERE id = %s", (taken,)).fetchone()
    assert row == ("pending", other_token)
    assert pg.execute("SELECT count(*) FROM allocations WHERE job_id = 'taken'").fetchone() == (0,)


def test_when_the_batch_submit_fails_each_evaluation_goes_the_one_at_a_time_way(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mock_nodes(pg, 2)
    eval_ids = [register_mock_job(engine, f"web{i}", count=1, cpu=100) for i in range(3)]

    def refused(*_args: object) -> list[int | None]:
        raise psycopg.OperationalError("the connection broke during the batch submit")

    monkeypatch.setattr(plans, "submit_batch", refused)
    singles = counting(monkeypatch, plans, "submit")
    claims = claim_batch(engine)
    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead)
    assert len(singles) == 3
    for eval_id in eval_ids:
        assert status(pg, eval_id)[:2] == ("complete", True)


def test_a_batch_settles_its_scheduling_evaluations_before_its_garbage_collection(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A core evaluation (priority 200) is claimed first but settled last: collection may run
    for long, and the other evaluations' completions do not wait for it."""
    mock_nodes(pg, 2)
    # One placed (the applier completes it with its plan), one that fits nowhere (no plan: the
    # worker completes it, blocked, when it settles it).
    eval_ids = [register_mock_job(engine, "fits", count=1, cpu=100), register_mock_job(engine, "huge", 1, 99_999)]
    with transaction(make_sessionmaker(engine)) as session:
        enqueue_forced(session)
    seen_at_collection: list[tuple[Any, ...]] = []
    real = Worker.collect_garbage  # the real collection still runs

    def collect(self: Worker, *args: Any) -> Any:
        rows = pg.execute("SELECT status FROM evaluations WHERE id = ANY(%s::uuid[])", (eval_ids,)).fetchall()
        seen_at_collection.extend(rows)
        return real(self, *args)

    monkeypatch.setattr(Worker, "collect_garbage", collect)
    claims = broker.claim_batch(engine, ALL_SCHEDULERS, "test-worker", 60, 8)
    assert claims[0].evaluation.type == "_core" and len(claims) == 3
    with batch_handled(engine, database_url, claims) as (thread, lead):
        apply_until_done(thread, lead)
    assert seen_at_collection == [("complete",), ("complete",)]
    assert pg.execute("SELECT job_id FROM evaluations WHERE status = 'blocked'").fetchall() == [("huge",)]


def test_a_rescue_takes_a_lapsed_lease_alone_and_else_a_whole_batch(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    """About once a second a loop looks for a lapsed lease first: it takes that one alone, and
    when there is none it claims a batch of ready evaluations, as its other claims do (not one
    evaluation alone, which would be scheduled, read and submitted on its own)."""
    lapsed = register(engine, "lapsed")
    assert [str(c.evaluation.id) for c in claim_batch(engine)] == [lapsed]
    pg.execute("UPDATE evaluations SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (lapsed,))
    ready = [register(engine, f"job{i}") for i in range(3)]
    worker = Worker(Settings(database_url=database_url, eval_batch=8), database_url, ALL_SCHEDULERS)
    try:
        rescued = worker._claim(rescue=True)
        assert [(str(c.evaluation.id), c.delivery_count) for c in rescued] == [(lapsed, 2)]
        assert sorted(str(c.evaluation.id) for c in worker._claim(rescue=True)) == sorted(ready)
        assert worker._claim(rescue=True) == []
    finally:
        worker.close()
