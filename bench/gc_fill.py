"""Bulk terminal state for GC tests and the GC benchmark: jobs, each with many complete
evaluations, one applied plan (and its result) per evaluation and one finished allocation per
evaluation, all aged past every threshold. Rows are written by SQL in a handful of statements."""

from __future__ import annotations

import psycopg
from psycopg import sql
from sqlalchemy.orm import Session

from app.db.engines import libpq_url, make_engine
from app.jobspec import normalize_job
from app.store.job.jobs import RegisterOptions, register_job

TEMPLATE = "gc-template"


def fill_terminal(url: str, *, jobs: int, evals_per_job: int, stopped_every: int = 4, age: str = "2 days") -> int:
    """Add `jobs` jobs (every `stopped_every`-th stopped) with `evals_per_job` terminal
    evaluations each; returns how many rows were written."""
    _template_job(url)
    with psycopg.connect(libpq_url(url)) as conn:
        node_id = _node(conn)
        written = _clone(
            conn,
            "jobs",
            TEMPLATE,
            jobs,
            {"id": "'gc-' || i", "name": "'gc-' || i", "stop": f"mod(i, {stopped_every}) = 0"},
        )
        written += _clone(conn, "job_versions", TEMPLATE, jobs, {"job_id": "'gc-' || i"}, key="job_id")
        conn.execute(
            "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, "
            "status, create_index, modify_index, create_time, modify_time) "
            "SELECT gen_random_uuid(), 'default', 'gc-' || j, 50, 'service', 'job-register', 1, 'complete', 2, 2, "
            "now() - CAST(%(age)s AS interval), now() - CAST(%(age)s AS interval) "
            "FROM generate_series(1, %(jobs)s) j, generate_series(1, %(evals)s) k",
            {"age": age, "jobs": jobs, "evals": evals_per_job},
        )
        conn.execute(
            "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, "
            "snapshot_index, status, node_update, node_allocation, node_preemptions, deployment_updates, applied_at) "
            "SELECT e.id, gen_random_uuid(), 1, e.namespace, e.job_id, 50, false, 1, 'applied', '{}', '{}', '{}', "
            "'[]', e.modify_time FROM evaluations e WHERE e.job_id LIKE 'gc-%%' AND e.job_id <> %(t)s",
            {"t": TEMPLATE},
        )
        conn.execute(
            "INSERT INTO plan_results (plan_id, node_update, node_allocation, node_preemptions, rejected_nodes, "
            "ineligible_nodes, refresh_index, alloc_index, applier_term) "
            "SELECT p.id, '{}', '{}', '{}', '{}', '{}', 0, 2, 1 FROM plans p WHERE p.job_id LIKE 'gc-%%'"
        )
        conn.execute(
            "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
            "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
            "modify_index, alloc_modify_index, create_time, modify_time) "
            "SELECT gen_random_uuid(), e.namespace, e.job_id, 0, e.id, %(node)s, 'gc-node', 'g', "
            "e.job_id || '.g[0]', 'stop', 'complete', 100, 64, 64, 10, 2, 2, 2, e.modify_time, e.modify_time "
            "FROM evaluations e WHERE e.job_id LIKE 'gc-%%' AND e.job_id <> %(t)s",
            {"node": node_id, "t": TEMPLATE},
        )
        conn.execute("DELETE FROM evaluations WHERE job_id = %s", (TEMPLATE,))
        conn.execute("DELETE FROM job_versions WHERE job_id = %s", (TEMPLATE,))
        conn.execute("DELETE FROM jobs WHERE id = %s", (TEMPLATE,))
        conn.execute("ANALYZE")
        total = jobs * evals_per_job
        return written + total * 4


def _template_job(url: str) -> None:
    spec = normalize_job(
        {
            "ID": TEMPLATE,
            "Type": "service",
            "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "mock"}]}],
        }
    )
    engine = make_engine(url, "test")
    try:
        with Session(engine) as session, session.begin():
            register_job(session, spec, RegisterOptions())
    finally:
        engine.dispose()


def _node(conn: psycopg.Connection[tuple[object, ...]]) -> object:
    row = conn.execute(
        "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
        "status_updated_at, scheduling_eligibility, cpu_shares, memory_mb, disk_mb, create_index, modify_index) "
        "VALUES (gen_random_uuid(), 'x', 'gc-node', 'dc1', 'default', 'v1:gc', 'ready', now(), 'eligible', "
        "64000, 262144, 1000000, 1, 1) RETURNING id"
    ).fetchone()
    assert row is not None
    return row[0]


def _clone(
    conn: psycopg.Connection[tuple[object, ...]],
    table: str,
    template: str,
    count: int,
    overrides: dict[str, str],
    key: str = "id",
) -> int:
    """Copy the template's row `count` times (i = 1..count), replacing some columns by SQL expressions."""
    columns = [
        str(r[0])
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND is_generated = 'NEVER' "
            "AND identity_generation IS NULL ORDER BY ordinal_position",
            (table,),
        )
    ]
    select_list = sql.SQL(", ").join(
        sql.SQL(overrides[c]) if c in overrides else sql.SQL("t.{}").format(sql.Identifier(c)) for c in columns
    )
    statement = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} t, generate_series(1, %s) i WHERE t.{} = %s").format(
        sql.Identifier(table),
        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        select_list,
        sql.Identifier(table),
        sql.Identifier(key),
    )
    return conn.execute(statement, (count, template)).rowcount
