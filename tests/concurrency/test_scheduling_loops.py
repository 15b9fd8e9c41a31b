"""A worker process with several scheduling loops (--num-schedulers, Nomad's num_schedulers):
each loop holds its own evaluation, the loops share one listener, and killing the process loses
none of them."""

from __future__ import annotations

import signal

import psycopg
import pytest
from sqlalchemy import Engine

from tests.support.pipeline import assert_pipeline_invariants, pipeline_quiet, register_mock_job
from tests.support.processes import CorralFactory, wait_for
from tests.support.rows import add_nodes

pytestmark = pytest.mark.concurrency
Conn = psycopg.Connection[tuple[object, ...]]

LOOPS, JOBS, COUNT = 3, 8, 2


def leases(pg: Conn) -> list[tuple[str, str]]:
    """(job, lease owner) of every leased evaluation."""
    rows = pg.execute("SELECT job_id, lease_owner FROM evaluations WHERE lease_token IS NOT NULL ORDER BY job_id")
    return [(str(job), str(owner)) for job, owner in rows.fetchall()]


def all_loops_waiting(pg: Conn) -> bool:
    """Every loop holds an evaluation and waits for its plan's verdict (there is no applier)."""
    plans = pg.execute("SELECT count(*) FROM plans WHERE status = 'pending'").fetchone()
    return len(leases(pg)) == LOOPS and plans == (LOOPS,)


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    # One evaluation per claim: the loops, not batches, are under test (a loop's first claim, the
    # rescue, takes a whole batch when no lease has lapsed, which left the other loops nothing).
    return {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_EVAL_LEASE_S": "2",
        "CORRAL_POLL_INTERVAL_S": "0.2",
        "CORRAL_EVAL_BATCH": "1",
    }


def test_each_loop_holds_its_own_evaluation_and_all_complete(
    corral: CorralFactory, engine: Engine, pg: Conn, env: dict[str, str]
) -> None:
    add_nodes(pg, 4, cpu=1000)
    for i in range(JOBS):
        register_mock_job(engine, f"job-{i}", COUNT, 100)
    worker = corral(["worker", "--num-schedulers", str(LOOPS)], env=env)
    # No applier yet: each loop claims one evaluation, submits its plan and waits.
    assert wait_for(lambda: all_loops_waiting(pg), timeout=60), leases(pg)
    held = leases(pg)
    assert len({job for job, _ in held}) == LOOPS  # distinct evaluations, of distinct jobs
    owners = {owner for _, owner in held}
    assert len(owners) == LOOPS  # one owner per loop ...
    assert {owner.rsplit(":", 2)[1] for owner in owners} == {str(worker.process.pid)}  # ... all in one process
    listening = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'corral-worker-listen'"
    assert pg.execute(listening).fetchone() == (1,)  # the loops share the process's one listener
    corral(["applier"], env=env)
    assert wait_for(lambda: pipeline_quiet(pg), timeout=120)
    statuses = pg.execute("SELECT status, count(*) FROM evaluations GROUP BY status").fetchall()
    assert statuses == [("complete", JOBS)]
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (JOBS * COUNT,)
    assert_pipeline_invariants(pg, COUNT)
    assert worker.process.poll() is None


def test_killing_a_multi_loop_worker_loses_no_evaluation(
    corral: CorralFactory, engine: Engine, pg: Conn, env: dict[str, str]
) -> None:
    add_nodes(pg, 4, cpu=1000)
    for i in range(JOBS):
        register_mock_job(engine, f"job-{i}", COUNT, 100)
    victim = corral(["worker", "--num-schedulers", str(LOOPS)], env=env)
    assert wait_for(lambda: all_loops_waiting(pg), timeout=60), leases(pg)
    victim.process.send_signal(signal.SIGKILL)
    victim.wait(30)
    # Three evaluations leased by a dead process, their plans pending: the applier may apply
    # those plans while the leases last or refuse them after; either way a new worker finishes.
    corral(["applier"], env=env)
    survivor = corral(["worker", "--num-schedulers", str(LOOPS)], env=env)
    assert wait_for(lambda: pipeline_quiet(pg), timeout=120)
    statuses = pg.execute("SELECT status, count(*) FROM evaluations GROUP BY status").fetchall()
    assert statuses == [("complete", JOBS)]
    assert pg.execute("SELECT count(*) FROM allocations WHERE desired_status = 'run'").fetchone() == (JOBS * COUNT,)
    assert_pipeline_invariants(pg, COUNT)
    assert survivor.process.poll() is None
