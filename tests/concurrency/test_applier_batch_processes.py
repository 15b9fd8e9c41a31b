"""The batched applier and the one-write-per-evaluation path as real processes: several workers
race for the same tight cluster, so batches hold plans that compete for one node, while the
active applier is killed mid-run and a standby takes over. Every evaluation must be completed
exactly once (a trigger records each transition to complete), no node overcommitted, every
slot filled. Under this much contention an evaluation can lose its plan's node five times in a
row and end as Nomad's does: failed, with a max-plan-attempts blocked evaluation that the
leader's periodic sweep releases (every minute in a cluster; run here directly)."""

from __future__ import annotations

import signal
import time

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import make_sessionmaker, transaction
from app.leader.eval_sweeps import sweep_max_plan_blocked
from tests.support.pipeline import pipeline_quiet, register_mock_job
from tests.support.processes import CorralFactory, wait_for
from tests.support.rows import add_nodes

pytestmark = pytest.mark.concurrency
Conn = psycopg.Connection[tuple[object, ...]]

NODES, NODE_CPU, JOBS, COUNT, TASK_CPU = 12, 1000, 40, 3, 100  # 120 slots for 120 allocations

COMPLETION_LOG = """
CREATE TABLE test_completions (eval_id uuid NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION test_log_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO test_completions (eval_id) VALUES (NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER test_log_completion AFTER UPDATE OF status ON evaluations
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'complete' AND NEW.status = 'complete')
EXECUTE FUNCTION test_log_completion();
"""


def register(engine: Engine, job_id: str) -> None:
    register_mock_job(engine, job_id, COUNT, TASK_CPU)


def settle(pg: Conn, engine: Engine) -> None:
    """Wait until nothing is pending, releasing max-plan-attempts blocked evaluations as the
    leader would, until none is left."""
    for _ in range(10):
        assert wait_for(lambda: pipeline_quiet(pg), timeout=180), "the pipeline did not settle"
        time.sleep(1)  # anything still in flight would show up now
        with transaction(make_sessionmaker(engine)) as session:
            if sweep_max_plan_blocked(session) == 0 and pipeline_quiet(pg):
                return
    raise AssertionError("evaluations kept exhausting their plan attempts")


def results(pg: Conn) -> int:
    row = pg.execute("SELECT count(*) FROM plan_results").fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


def test_racing_workers_and_a_killed_applier_complete_each_evaluation_once(
    corral: CorralFactory, database_url: str, engine: Engine, pg: Conn
) -> None:
    pg.execute(COMPLETION_LOG)
    add_nodes(pg, NODES, cpu=NODE_CPU)
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_EVAL_LEASE_S": "3", "CORRAL_POLL_INTERVAL_S": "0.2"}
    for i in range(JOBS):
        register(engine, f"job-{i:03}")
    active = corral(["applier"], env=env)
    assert wait_for(lambda: pg.execute("SELECT count(*) FROM leader_terms WHERE role = 'applier'").fetchone() == (1,))
    standby = corral(["applier"], env=env)
    workers = [corral(["worker"], env=env) for _ in range(4)]
    assert wait_for(lambda: results(pg) >= 10, timeout=120)
    active.process.send_signal(signal.SIGKILL)
    active.wait(30)
    settle(pg, engine)
    twice = pg.execute("SELECT eval_id FROM test_completions GROUP BY eval_id HAVING count(*) > 1").fetchall()
    assert twice == []
    over = pg.execute("SELECT name FROM v_node_usage WHERE cpu_used > cpu_capacity").fetchall()
    assert over == []
    placed = pg.execute("SELECT count(*) FROM allocations WHERE desired_status = 'run'").fetchone()
    assert placed == (JOBS * COUNT,)
    by_applier = pg.execute("SELECT count(*) FROM plan_results WHERE completed_eval").fetchone()
    assert by_applier is not None and isinstance(by_applier[0], int) and by_applier[0] > 0
    # Every evaluation the applier says it completed was completed once, and is complete now.
    unlogged = pg.execute(
        "SELECT p.eval_id FROM plan_results r JOIN plans p ON p.id = r.plan_id JOIN evaluations e ON e.id = p.eval_id "
        "WHERE r.completed_eval AND (e.status <> 'complete' "
        "OR NOT EXISTS (SELECT 1 FROM test_completions c WHERE c.eval_id = p.eval_id))"
    ).fetchall()
    assert unlogged == []
    left = pg.execute("SELECT count(*) FROM evaluations WHERE status = 'blocked'").fetchone()
    assert left == (0,)
    assert standby.process.poll() is None and all(w.process.poll() is None for w in workers)
