"""Concourse's three GC goals with real processes: safe (GC on a one-second interval racing
scheduling, client status updates and job updates deletes nothing live), airtight (after a
forced GC only live nodes and configuration remain, and no reference dangles) and resilient
(a GC killed with SIGKILL mid-run leaves a consistent database, and the next run finishes)."""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from functools import partial

import httpx
import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import make_sessionmaker, transaction
from app.gc.core_evals import enqueue_core
from app.gc.thresholds import Thresholds
from app.jobspec import normalize_job
from app.store.job.jobs import RegisterOptions, deregister_job, register_job
from app.values.errors import InvalidInput, NotFound
from app.wire.job import JobSpec
from bench.gc_fill import fill_terminal
from tests.support.orphans import orphans
from tests.support.processes import CorralFactory, free_port, wait_for, wait_healthy
from tests.support.rows import add_nodes

pytestmark = pytest.mark.concurrency
Conn = psycopg.Connection[tuple[object, ...]]

# Test-only witness: any delete of a row that is still live is recorded (not refused, so the
# run carries on and every violation is reported).
WITNESS = """
CREATE TABLE gc_witness (kind text, id text, detail text);
CREATE FUNCTION witness_allocations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF corral_alloc_live_v1(OLD.desired_status, OLD.client_status) OR OLD.client_status = 'running' THEN
        INSERT INTO gc_witness VALUES ('allocation', OLD.id::text, OLD.desired_status || '/' || OLD.client_status);
    END IF;
    RETURN OLD;
END $$;
CREATE FUNCTION witness_evaluations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status IN ('pending', 'blocked') THEN
        INSERT INTO gc_witness VALUES ('evaluation', OLD.id::text, OLD.status || ' ' || OLD.job_id);
    END IF;
    RETURN OLD;
END $$;
CREATE FUNCTION witness_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (OLD.stop OR OLD.purged_at IS NOT NULL OR OLD.type = 'batch') THEN
        INSERT INTO gc_witness VALUES ('job', OLD.id, OLD.status);
    END IF;
    RETURN OLD;
END $$;
CREATE FUNCTION witness_nodes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'down' THEN
        INSERT INTO gc_witness VALUES ('node', OLD.id::text, OLD.status);
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER witness BEFORE DELETE ON allocations FOR EACH ROW EXECUTE FUNCTION witness_allocations();
CREATE TRIGGER witness BEFORE DELETE ON evaluations FOR EACH ROW EXECUTE FUNCTION witness_evaluations();
CREATE TRIGGER witness BEFORE DELETE ON jobs FOR EACH ROW EXECUTE FUNCTION witness_jobs();
CREATE TRIGGER witness BEFORE DELETE ON nodes FOR EACH ROW EXECUTE FUNCTION witness_nodes();
"""

FAST_GC = {
    **{f"CORRAL_{kind}_GC_INTERVAL_S": "1" for kind in ("EVAL", "JOB", "NODE", "DEPLOYMENT")},
    **{f"CORRAL_{kind}_GC_THRESHOLD_S": "0" for kind in ("EVAL", "BATCH_EVAL", "JOB", "NODE", "DEPLOYMENT")},
}


def spec(job_id: str, job_type: str, count: int, version: int = 0, parent: str | None = None) -> JobSpec:
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": 100, "MemoryMB": 32}}
    return normalize_job(
        {
            "ID": job_id,
            "Type": job_type,
            "Datacenters": ["dc1"],
            "Meta": {"version": str(version)},
            "TaskGroups": [{"Name": "g", "Count": count, "Tasks": [task]}],
            **({"ParentID": parent} if parent else {}),
        }
    )


class Workload:
    """Job registrations, updates and stops, and a fake client moving allocations along."""

    def __init__(self, engine: Engine, pg: Conn, seed: int) -> None:
        self.sessions = make_sessionmaker(engine)
        self.pg = pg
        self.rng = random.Random(seed)
        self.jobs: dict[str, str] = {}  # id -> type, for jobs not stopped
        self.stopped: set[str] = set()
        self.children = self.refused_children = 0

    def step(self, i: int) -> None:
        action = self.rng.random()
        if action < 0.35 or not self.jobs:
            job_id = f"job-{i:03}"
            job_type = self.rng.choice(["service", "batch"])
            self._write(lambda s: register_job(s, spec(job_id, job_type, 3), RegisterOptions()))
            self.jobs[job_id] = job_type
        elif action < 0.55:
            job_id = self.rng.choice(sorted(self.jobs))
            job_type = self.jobs[job_id]
            self._write(lambda s: register_job(s, spec(job_id, job_type, 3, version=i), RegisterOptions()))
        elif action < 0.7:
            job_id = self.rng.choice(sorted(self.jobs))
            try:
                self._write(lambda s: deregister_job(s, "default", job_id, purge=False, eval_priority=None))
            except NotFound:
                # A finished batch job is collected without being stopped, as in Nomad.
                assert self.jobs[job_id] == "batch", f"service job {job_id} vanished"
            del self.jobs[job_id]
            self.stopped.add(job_id)
        elif action < 0.8:
            # A child of a live parent (which then outlives it), or of a stopped one that job
            # GC may be deleting right now: either the parent is kept for the child, or (once
            # gone) the registration is refused cleanly.
            parent = self.rng.choice(sorted(self.jobs) + sorted(self.stopped)[-3:])
            child = f"{parent}/child-{i:03}"
            try:
                self._write(lambda s: register_job(s, spec(child, "batch", 1, parent=parent), RegisterOptions()))
            except InvalidInput as err:
                assert "Job.ParentID" in str(err), err
                self.refused_children += 1
            else:
                self.jobs[child] = "batch"
                self.children += 1
        self.client_updates()

    def client_updates(self) -> None:
        """What clients would report: pending work starts, batch work finishes, stops happen.
        Like a real client, a report refused by a deadlock is simply sent again."""
        for _ in range(10):
            try:
                self._report()
                return
            except psycopg.errors.DeadlockDetected:
                continue
        raise AssertionError("client updates kept deadlocking")

    def _report(self) -> None:
        self.pg.execute(
            "UPDATE allocations SET client_status = 'running', modify_time = now() "
            "WHERE desired_status = 'run' AND client_status = 'pending'"
        )
        self.pg.execute(
            "UPDATE allocations a SET client_status = 'complete', modify_time = now() FROM jobs j "
            "WHERE j.namespace = a.namespace AND j.id = a.job_id AND j.type = 'batch' "
            "AND a.client_status = 'running' AND random() < 0.5"
        )
        self.pg.execute(
            "UPDATE allocations SET client_status = 'complete', modify_time = now() "
            "WHERE desired_status IN ('stop', 'evict') AND client_status IN ('pending', 'running')"
        )

    def _write(self, fn: Callable[[Session], object]) -> None:
        with transaction(self.sessions) as session:
            fn(session)


def settled(workload: Workload, pg: Conn) -> bool:
    """After the clients' reports of this round: nothing left for the pipeline to do."""
    workload.client_updates()
    return quiet(pg)


def quiet(pg: Conn) -> bool:
    row = pg.execute(
        "SELECT (SELECT count(*) FROM evaluations WHERE status = 'pending' AND type <> '_core'), "
        "(SELECT count(*) FROM plans WHERE status = 'pending')"
    ).fetchone()
    return row == (0, 0)


def test_gc_racing_the_pipeline_deletes_nothing_live_and_forced_gc_leaves_nothing(
    corral: CorralFactory, database_url: str, engine: Engine, pg: Conn
) -> None:
    pg.execute(WITNESS)
    add_nodes(pg, 20, cpu=1000)
    port = free_port()
    env = {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_EVAL_LEASE_S": "5",
        "CORRAL_POLL_INTERVAL_S": "0.2",
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_GC_BATCH_SIZE": "50",
        **FAST_GC,
    }
    roles = [["server"], ["worker"], ["worker"], ["applier"], ["leader"]]
    processes = [corral(args, env=env) for args in roles]
    wait_healthy(f"http://127.0.0.1:{port}", processes[0])

    workload = Workload(engine, pg, seed=20261121)
    deadline = time.monotonic() + 20
    i = 0
    while time.monotonic() < deadline:
        workload.step(i)
        i += 1
        time.sleep(0.05)
    assert wait_for(lambda: settled(workload, pg), timeout=120), "pipeline did not settle"
    time.sleep(2)  # a few more GC ticks over the settled state

    # Safe: no live row was ever deleted, every live job still has all its work.
    assert pg.execute("SELECT * FROM gc_witness").fetchall() == []
    for job_id, job_type in workload.jobs.items():
        if job_type == "service":
            assert pg.execute("SELECT count(*) FROM jobs WHERE id = %s", (job_id,)).fetchone() == (1,), job_id
            placed = pg.execute(
                "SELECT count(*) FROM allocations WHERE job_id = %s AND desired_status = 'run'", (job_id,)
            ).fetchone()
            assert placed == (3,), job_id
    kinds = {str(r[0]) for r in pg.execute("SELECT DISTINCT kind FROM gc_runs WHERE status = 'complete'")}
    assert kinds == {"eval-gc", "job-gc", "node-gc", "deployment-gc"}, pg.execute(
        "SELECT kind, status, error FROM gc_runs WHERE status <> 'complete'"
    ).fetchall()
    removed = pg.execute("SELECT coalesce(sum(rows_removed), 0) FROM v_gc_runs").fetchone()
    assert removed is not None and int(str(removed[0])) > 0, "GC never removed anything: the race was not exercised"
    assert workload.children > 0, "no child job was registered: the parent race was not exercised"
    for proc in processes:
        assert proc.process.poll() is None, proc.output
        assert "Traceback" not in proc.output, proc.output

    # Airtight: stop everything, let it finish, force a GC through the API.
    for job_id in sorted(j for j, t in workload.jobs.items() if t == "service"):
        deregister = partial(deregister_job, namespace="default", job_id=job_id, purge=False, eval_priority=None)
        workload._write(deregister)
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE client_status = 'running'")
    assert wait_for(lambda: settled(workload, pg), timeout=120)
    response = httpx.put(f"http://127.0.0.1:{port}/v1/system/gc", timeout=120)
    assert response.status_code == 200, response.text
    assert response.json()["Status"] == "complete"
    for table in ("jobs", "job_versions", "allocations", "plans", "plan_results", "deployments", "periodic_launches"):
        assert pg.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
    leftover = pg.execute("SELECT DISTINCT type FROM evaluations").fetchall()
    assert leftover in ([], [("_core",)])  # the run that just did it, and ticks queued since
    assert pg.execute("SELECT count(*) FROM nodes WHERE status = 'ready'").fetchone() == (20,)
    assert pg.execute("SELECT * FROM gc_witness").fetchall() == []
    assert orphans(pg) == []


def test_gc_killed_mid_run_leaves_a_consistent_state_and_the_next_run_finishes(
    corral: CorralFactory, database_url: str, engine: Engine, pg: Conn
) -> None:
    fill_terminal(database_url, jobs=200, evals_per_job=100)
    total_evals = 200 * 100
    env = {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_EVAL_LEASE_S": "2",
        "CORRAL_POLL_INTERVAL_S": "0.2",
        "CORRAL_GC_BATCH_SIZE": "100",
    }
    with transaction(make_sessionmaker(engine)) as session:
        eval_id = enqueue_core(session, "force-gc", Thresholds.forced())
    first = corral(["worker", "--schedulers", "_core"], env=env)
    assert wait_for(lambda: count(pg, "allocations") < total_evals * 0.8, timeout=60)
    first.process.send_signal(signal.SIGKILL)
    first.wait(30)

    # Consistent at the kill: every reference resolves, nothing half-deleted.
    assert orphans(pg) == []
    remaining = count(pg, "evaluations", "type <> '_core'")
    assert 0 < remaining <= total_evals
    assert pg.execute("SELECT status FROM gc_runs").fetchall() == [("running",)]

    corral(["worker", "--schedulers", "_core"], env=env)  # rescues the lapsed lease
    assert wait_for(
        lambda: pg.execute("SELECT status FROM evaluations WHERE id = %s", (eval_id,)).fetchone() == ("complete",),
        timeout=120,
    )
    for table in ("allocations", "plans", "plan_results"):
        assert count(pg, table) == 0, table
    # Stopped jobs went; running service jobs stay (only dead jobs are collected), one version each.
    assert count(pg, "jobs") == count(pg, "jobs", "NOT stop") == 150
    assert count(pg, "job_versions") == 150
    assert count(pg, "evaluations", "type <> '_core'") == 0
    runs = pg.execute("SELECT status, removed FROM gc_runs ORDER BY id").fetchall()
    assert [r[0] for r in runs] == ["interrupted", "complete"]
    assert orphans(pg) == []


def count(pg: Conn, table: str, where: str = "true") -> int:
    row = pg.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()
    assert row is not None
    return int(str(row[0]))


def test_two_leaders_ticking_never_queue_a_collector_twice(corral: CorralFactory, database_url: str, pg: Conn) -> None:
    env = {"CORRAL_DATABASE_URL": database_url, **FAST_GC}
    for _ in range(2):
        corral(["leader"], env=env)
    assert wait_for(lambda: count(pg, "evaluations", "type = '_core'") == 4, timeout=60)
    time.sleep(3)  # several more ticks from the active leader; the standby never ticks
    queued = pg.execute("SELECT job_id, count(*) FROM evaluations WHERE type = '_core' GROUP BY job_id").fetchall()
    assert sorted(queued) == [("deployment-gc", 1), ("eval-gc", 1), ("job-gc", 1), ("node-gc", 1)]
