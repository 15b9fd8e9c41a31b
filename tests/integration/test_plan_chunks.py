"""A real worker submits a big plan in chunks (CORRAL_PLAN_CHUNK_PLACEMENTS) while its pass goes
on; the applier writes them one by one; a chunk rejected on a node that filled up meanwhile
leads to a refresh that places only what is missing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.pipeline import plans
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from app.store.job.jobs import RegisterOptions, register_job
from tests.support.pipeline import claim, handling, register_mock_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
COUNT, CHUNK, NODE_CPU = 10, 3, 1000
# Called with the pending plan's id and node IDs just before the applier takes it.
BeforeApply = Callable[[int, list[str]], None]


def cluster(pg: Conn, nodes: int) -> list[str]:
    ids = [insert_node(pg, name=f"n{i}", cpu=NODE_CPU) for i in range(nodes)]
    pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")
    return ids


def schedule(
    engine: Engine,
    pg: Conn,
    database_url: str,
    before_apply: BeforeApply | None = None,
    stop: threading.Event | None = None,
) -> None:
    """A real worker handles the next batch evaluation with chunks of CHUNK placements; its
    plans are applied here, one per transaction, as they arrive. The worker listens before the
    pass, as its loop does, and polls only every minute: a verdict notification lost while the
    pass went on would show as a worker that never finishes."""
    held = claim(engine, ("batch",))
    assert held is not None
    settings = Settings(database_url=database_url, plan_chunk_placements=CHUNK, poll_interval_s=60)
    deadline = time.monotonic() + 30  # a hang, not a speed: the whole exchange takes a second
    with handling(engine, database_url, held, settings, stop) as (thread, lead):
        assert lead.term is not None
        while thread.is_alive():
            assert time.monotonic() < deadline, "the worker is still waiting for a verdict"
            row = pg.execute(
                "SELECT id, ARRAY(SELECT jsonb_object_keys(node_allocation)) FROM plans "
                "WHERE status = 'pending' ORDER BY id LIMIT 1"
            ).fetchone()
            if row is None:
                thread.join(0.02)
                continue
            if before_apply is not None:
                plan_id, node_ids = row
                assert isinstance(node_ids, list)
                before_apply(int(str(plan_id)), [str(n) for n in node_ids])
            with Session(bind=lead.connection) as session, session.begin():
                assert apply_next(session, lead.term) is not None
        while pg.execute("SELECT 1 FROM plans WHERE status = 'pending'").fetchone() is not None:
            with Session(bind=lead.connection) as session, session.begin():  # refuse what a nack left
                apply_next(session, lead.term)


def placed_names(pg: Conn, job_id: str) -> list[str]:
    rows = pg.execute("SELECT name FROM allocations WHERE job_id = %s AND desired_status = 'run'", (job_id,))
    return sorted(str(r[0]) for r in rows.fetchall())


def test_a_big_plan_goes_in_chunks_and_the_worker_completes_the_evaluation(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    cluster(pg, 4)
    eval_id = register_mock_job(engine, "big", COUNT, 100, "batch")
    schedule(engine, pg, database_url)

    assert placed_names(pg, "big") == sorted(f"big.g[{i}]" for i in range(COUNT))
    plans = pg.execute(
        "SELECT p.attempt, p.status, p.completion IS NULL, r.completed_eval, "
        "(SELECT count(*) FROM jsonb_each(p.node_allocation) n, jsonb_array_elements(n.value)) "
        "FROM plans p JOIN plan_results r ON r.plan_id = p.id WHERE p.eval_id = %s ORDER BY p.id",
        (eval_id,),
    ).fetchall()
    # Three chunks of 3 and the final plan with the last placement; none carries the completion.
    assert plans == [(attempt, "applied", True, False, 3) for attempt in (1, 2, 3)] + [(4, "applied", True, False, 1)]
    status = pg.execute("SELECT status, queued_allocations FROM evaluations WHERE id = %s", (eval_id,)).fetchone()
    assert status == ("complete", {"g": 0})


def test_a_small_plan_still_goes_whole_and_the_applier_completes_it(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    cluster(pg, 2)
    eval_id = register_mock_job(engine, "small", CHUNK - 1, 100, "batch")
    schedule(engine, pg, database_url)
    plans = pg.execute(
        "SELECT p.completion IS NULL, r.completed_eval FROM plans p JOIN plan_results r ON r.plan_id = p.id "
        "WHERE p.eval_id = %s",
        (eval_id,),
    ).fetchall()
    assert plans == [(False, True)]
    assert pg.execute("SELECT status FROM evaluations WHERE id = %s", (eval_id,)).fetchone() == ("complete",)


def test_a_chunk_rejected_on_a_node_that_filled_up_is_re_planned_without_duplicates(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    nodes = cluster(pg, 4)
    with transaction(make_sessionmaker(engine)) as session:
        hog_spec = {"ID": "hog", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}
        hog_eval = str(register_job(session, normalize_job(hog_spec), RegisterOptions()).eval_id)
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (hog_eval,))
    eval_id = register_mock_job(engine, "big", COUNT, 100, "batch")
    applied: list[int] = []
    filled: list[str] = []

    def fill_a_node_of_the_second_chunk(plan_id: int, chunk_nodes: list[str]) -> None:
        applied.append(plan_id)
        if len(applied) == 2:  # another job takes what is left of a node the second chunk places on
            node = chunk_nodes[0]
            used = pg.execute("SELECT coalesce(sum(cpu), 0) FROM allocations WHERE node_id = %s", (node,)).fetchone()
            assert used is not None
            filled.append(node)
            insert_allocation(pg, node, hog_eval, job_id="hog", cpu=NODE_CPU - int(str(used[0])))

    schedule(engine, pg, database_url, fill_a_node_of_the_second_chunk)

    assert placed_names(pg, "big") == sorted(f"big.g[{i}]" for i in range(COUNT))
    rejected = pg.execute(
        "SELECT r.rejected_nodes FROM plan_results r JOIN plans p ON p.id = r.plan_id "
        "WHERE p.eval_id = %s AND cardinality(r.rejected_nodes) > 0",
        (eval_id,),
    ).fetchall()
    assert rejected and all(isinstance(r[0], list) and [str(n) for n in r[0]] == filled for r in rejected)
    attempts = pg.execute("SELECT count(*) FROM plans WHERE eval_id = %s", (eval_id,)).fetchone()
    assert attempts is not None and int(str(attempts[0])) > 4  # the refresh's plan came after the four
    used = pg.execute(
        "SELECT node_id, sum(cpu) FROM allocations WHERE desired_status = 'run' GROUP BY node_id"
    ).fetchall()
    assert {str(n) for n, _ in used} <= set(nodes) and all(int(str(cpu)) <= NODE_CPU for _, cpu in used)
    assert pg.execute("SELECT status FROM evaluations WHERE id = %s", (eval_id,)).fetchone() == ("complete",)


def test_a_shutdown_between_chunks_gives_the_evaluation_back_and_the_next_pass_completes_it(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while the pass is between two chunks: the worker stops submitting, nacks, and
    the chunks it sent are applied or refused; the next delivery places only what is missing."""
    cluster(pg, 4)
    eval_id = register_mock_job(engine, "big", COUNT, 100, "batch")
    stop = threading.Event()
    real_submit = plans.submit
    submitted: list[int] = []

    def submit_then_stop(*args: Any, **kwargs: Any) -> int:
        plan_id = real_submit(*args, **kwargs)
        submitted.append(plan_id)
        if len(submitted) == 2:
            stop.set()
        return plan_id

    monkeypatch.setattr(plans, "submit", submit_then_stop)
    schedule(engine, pg, database_url, stop=stop)
    monkeypatch.setattr(plans, "submit", real_submit)

    assert len(submitted) == 2  # nothing after the chunk during which the stop came
    row = pg.execute("SELECT status, lease_token FROM evaluations WHERE id = %s", (eval_id,)).fetchone()
    assert row == ("pending", None)
    first = placed_names(pg, "big")
    assert len(first) in (0, CHUNK, 2 * CHUNK)  # whole chunks applied, the others refused

    pg.execute("UPDATE evaluations SET not_before = now() WHERE id = %s", (eval_id,))  # the nack's backoff
    schedule(engine, pg, database_url)
    assert placed_names(pg, "big") == sorted(f"big.g[{i}]" for i in range(COUNT))
    assert pg.execute("SELECT status FROM evaluations WHERE id = %s", (eval_id,)).fetchone() == ("complete",)
