"""Steps of the evaluation pipeline driven directly: register, claim, build and submit a plan, apply it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import make_sessionmaker, transaction
from app.db.leadership import Leadership
from app.jobspec import normalize_job
from app.pipeline import broker, plans
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from app.store.job.jobs import RegisterOptions, register_job
from app.structs import Allocation, Plan, Resources

TYPES = ("service", "batch", "system", "sysbatch")


def register(engine: Engine, job_id: str, priority: int = 50, job_type: str = "service") -> str:
    spec = normalize_job(
        {
            "ID": job_id,
            "Type": job_type,
            "Priority": priority,
            "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}],
        }
    )
    with transaction(make_sessionmaker(engine)) as session:
        result = register_job(session, spec, RegisterOptions())
    return str(result.eval_id)


def claim(engine: Engine, types: tuple[str, ...] = TYPES, lease_s: float = 60) -> broker.Claim | None:
    return broker.claim(engine, types, "test-worker", lease_s)


def alloc(held: broker.Claim, node: str, index: int, cpu: int = 500, alloc_id: uuid.UUID | None = None) -> Allocation:
    return Allocation(
        id=alloc_id or uuid.uuid4(),
        namespace="default",
        job_id=held.evaluation.job_id,
        job_version=0,
        task_group="g",
        name=f"{held.evaluation.job_id}.g[{index}]",
        node_id=uuid.UUID(node),
        eval_id=held.evaluation.id,
        desired_status="run",
        client_status="pending",
        resources=Resources(cpu=cpu, memory_mb=64, disk_mb=10),
    )


def submit(engine: Engine, held: broker.Claim, plan: Plan, attempt: int = 1) -> int:
    return plans.submit(engine, held, attempt, plan, held.evaluation.job_id, "default")


def apply(lead: Leadership, term: int) -> int | None:
    with Session(bind=lead.connection) as session, session.begin():
        return apply_next(session, term)


@contextmanager
def core_worker(database_url: str) -> Iterator[None]:
    """A real worker serving only _core evaluations, in a thread, for the duration."""
    from workers.worker import Worker

    stop = threading.Event()
    worker = Worker(Settings(database_url=database_url, poll_interval_s=0.1), database_url, ("_core",))
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


@contextmanager
def handling(
    engine: Engine,
    database_url: str,
    held: broker.Claim | list[broker.Claim],
    settings: Settings,
    stop: threading.Event | None = None,
) -> Iterator[tuple[threading.Thread, Leadership]]:
    """A real worker handling `held` (a list: as one batch) in a thread (listening first, as its
    loop does), and the applier role held here for the caller to apply its plans with; both
    closed afterwards, the worker stopped (with `stop`, set on the way out)."""
    from workers.worker import ALL_SCHEDULERS, Worker

    batch = held if isinstance(held, list) else [held]
    types = ALL_SCHEDULERS if isinstance(held, list) else (held.evaluation.type,)
    worker = Worker(settings, database_url, types)
    stop = stop or threading.Event()
    target, first = (worker.handle_batch, batch) if isinstance(held, list) else (worker.handle, held)
    thread = threading.Thread(target=target, args=(first, stop), daemon=True)
    lead = Leadership(engine, "applier")
    assert lead.try_acquire() and lead.term is not None
    worker.wakeup.listen()
    try:
        thread.start()
        yield thread, lead
    finally:
        stop.set()
        thread.join(30)
        lead.close()
        worker.wakeup.close()
        worker.leases.close()
        worker.engine.dispose()
    assert not thread.is_alive()


def register_mock_job(engine: Engine, job_id: str, count: int, cpu: int, job_type: str = "service") -> str:
    """A job (service by default) of one group of `count` mock tasks asking `cpu` MHz each,
    registered with its evaluation; the evaluation's ID."""
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": cpu, "MemoryMB": 32}}
    spec = normalize_job(
        {
            "ID": job_id,
            "Type": job_type,
            "Datacenters": ["dc1"],
            "TaskGroups": [{"Name": "g", "Count": count, "Tasks": [task]}],
        }
    )
    with transaction(make_sessionmaker(engine)) as session:
        return str(register_job(session, spec, RegisterOptions()).eval_id)


def pipeline_quiet(pg: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """No evaluation waits to be scheduled (failed follow-ups wait on purpose) and no plan to be applied."""
    row = pg.execute(
        "SELECT (SELECT count(*) FROM evaluations WHERE status = 'pending' AND triggered_by <> 'failed-follow-up'), "
        "(SELECT count(*) FROM plans WHERE status = 'pending')"
    ).fetchone()
    return row == (0, 0)


def assert_pipeline_invariants(pg: psycopg.Connection[tuple[Any, ...]], count: int) -> None:
    """DESIGN.md's invariants after a pipeline run: no overcommit, usage matches the allocations, no
    duplicate allocation, no stuck evaluation, no job above its count, every short job waiting."""
    overcommitted = pg.execute("SELECT name FROM v_node_usage WHERE cpu_used > cpu_capacity").fetchall()
    assert overcommitted == []
    drift = pg.execute(
        "SELECT v.name FROM v_node_usage v LEFT JOIN node_usage u ON u.node_id = v.id "
        "WHERE v.cpu_used <> COALESCE(u.cpu, 0)"
    ).fetchall()
    assert drift == []
    duplicated = pg.execute(
        "SELECT job_id, name FROM allocations WHERE desired_status = 'run' AND client_status IN "
        "('pending', 'running', 'unknown') GROUP BY job_id, name HAVING count(*) > 1"
    ).fetchall()
    assert duplicated == []
    stuck = pg.execute(
        "SELECT id, status, triggered_by FROM evaluations WHERE status = 'pending' "
        "AND NOT (triggered_by = 'failed-follow-up' AND not_before > now())"
    ).fetchall()
    assert stuck == []
    overfull = pg.execute(
        "SELECT job_id, count(*) FROM allocations WHERE desired_status = 'run' GROUP BY job_id HAVING count(*) > %s",
        (count,),
    ).fetchall()
    assert overfull == []
    # A job short of its count must be waiting, as one blocked (or delayed follow-up) evaluation.
    short = pg.execute(
        "SELECT j.id FROM jobs j WHERE (SELECT count(*) FROM allocations a WHERE a.job_id = j.id "
        "AND a.desired_status = 'run') < %s AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.job_id = j.id "
        "AND (e.status = 'blocked' OR e.triggered_by = 'failed-follow-up' AND e.status = 'pending'))",
        (count,),
    ).fetchall()
    assert short == [], _story(pg, [str(row[0]) for row in short])


def _story(pg: psycopg.Connection[tuple[Any, ...]], job_ids: list[str]) -> str:
    """What happened to jobs left short: their evaluations and plans, oldest first, so that a
    rare failure under random kills says which step lost the work."""
    evals = pg.execute(
        "SELECT job_id, id, status, triggered_by, status_description, create_index, modify_index FROM evaluations "
        "WHERE job_id = ANY(%s) ORDER BY job_id, create_index",
        (job_ids,),
    ).fetchall()
    plans = pg.execute(
        "SELECT p.job_id, p.eval_id, p.id, p.attempt, p.status, p.completion IS NOT NULL, r.node_allocation, "
        "r.rejected_nodes, r.completed_eval FROM plans p LEFT JOIN plan_results r ON r.plan_id = p.id "
        "WHERE p.job_id = ANY(%s) ORDER BY p.job_id, p.id",
        (job_ids,),
    ).fetchall()
    lines = [f"jobs short of their count with nothing waiting: {job_ids}", "evaluations:"]
    lines += [f"  {row}" for row in evals]
    lines += ["plans (job, eval, id, attempt, status, completes, placed, rejected, completed):"]
    lines += [f"  {row}" for row in plans]
    return "\n".join(lines)
