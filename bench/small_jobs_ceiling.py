"""The ceiling for bench.small_jobs: the statements the pipeline issues for one evaluation of a
small service job, run bare by pgbench (no Python), on the database the pipeline just worked
in, with as many clients as there were workers.

The statements are corral's own, loaded by name from sql/queries (so the ceiling follows them
when they change), found with pg_stat_statements on a run of the pipeline; per evaluation, in
the pipeline's transactions:
  1. the claim (claim_ready of one evaluation, autocommitted, asynchronous commit);
  2. the snapshot, REPEATABLE READ READ ONLY: snapshot_indexes, snapshot_job,
     snapshot_job_allocations, snapshot_job_versions_used, snapshot_usage, snapshot_ports,
     snapshot_config, snapshot_deployment, snapshot_nodes and snapshot_preemptible (both
     returning nothing here: the nodes come from the worker's cache, preemption is off);
     snapshot_usage returns the rows changed since the client's previous snapshot, as a
     worker's usage cache asks;
  3. the plan submit: wake_listeners, the lease check, INSERT INTO plans (the pipeline sends
     these as one statement, submit_plan, whose JSON parameters pgbench cannot pass);
  4. the apply: next_plan, take_index, fence_term, eval_still_owned, plan_nodes,
     plan_node_ports, plan_node_usage, plan_touched_allocs, INSERT INTO deployments, the new
     allocations (one INSERT ... SELECT where the applier sends a COPY; the same triggers fire),
     complete_evals (the evaluation completed with its plan), UPDATE plans with the NOTIFY that
     carries the verdict (so the worker reads no result), INSERT INTO plan_results.
Left out, as the pipeline's own overhead rather than its work: SAVEPOINT/RELEASE, the result
reads of a worker whose notification did not tell its verdict, session set-up. Added: one
primary-key lookup per evaluation that picks three random nodes (the scheduler's choice, made
in Python in the pipeline). The plan, result,
deployment and allocation payloads are copies of rows the pipeline wrote, so they are as large.
"""

from __future__ import annotations

import re
import resource
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from app.db.engines import libpq_url
from app.scheduler.preemption import PRIORITY_DELTA
from app.store.sql import query
from bench.common import pgbench
from bench.cpu import PostgresCpu


@dataclass(frozen=True)
class Ceiling:
    evaluations_per_s: float
    postgres_cpu_per_eval: float
    pgbench_cpu_per_eval: float


def named(name: str, **renames: str) -> str:
    """A statement from sql/queries with pgbench variables (both spell parameters `:name`),
    without its semicolon (pgbench's \\gset takes its place). `renames` map a parameter to
    another variable where two statements use one name for different values."""
    sql = query(name).text
    for old, new in renames.items():
        sql = re.sub(rf":{old}\b", f":{new}", sql)
    return sql.rstrip(";")


def copy_insert(conn: psycopg.Connection[tuple[object, ...]], table: str, overrides: dict[str, str]) -> str:
    """INSERT INTO table SELECT ... FROM its template row, some columns computed anew."""
    columns = [
        str(r[0])
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND table_schema = 'public' "
            "AND is_generated = 'NEVER' AND is_identity = 'NO' AND coalesce(column_default, '') NOT LIKE 'nextval%%' "
            "ORDER BY ordinal_position",
            (table,),
        )
    ]
    values = ", ".join(overrides.get(c, f"t.{c}") for c in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) SELECT {values} FROM bench_{table} t"


def script(conn: psycopg.Connection[tuple[object, ...]], nodes: int) -> str:
    deployment = copy_insert(
        conn, "deployments", {"id": "gen_random_uuid()", "job_id": ":job_id", "create_index": "state_index_own()"}
    )
    allocations = copy_insert(
        conn,
        "allocations",
        {
            "id": "gen_random_uuid()",
            "job_id": ":job_id",
            "eval_id": ":id",
            "node_id": "n.id",
            "node_name": "n.name",
            "name": ":job_id || '.g[' || (u.o - 1) || ']'",
            "deployment_id": ":deployment_id",
            "client_status": "'pending'",
            "create_index": "state_index_own()",
            "modify_index": "state_index_own()",
            "alloc_modify_index": "state_index_own()",
            "create_time": "now()",
            "modify_time": "now()",
        },
    )
    plan = copy_insert(
        conn,
        "plans",
        {
            "eval_id": ":id",
            "eval_token": ":lease_token",
            "job_id": ":job_id",
            "status": "'pending'",
            "applied_at": "NULL",
        },
    )
    result = copy_insert(conn, "plan_results", {"plan_id": ":plan_id", "applier_term": ":term"})
    steps = [
        *(f"\\set k{i} random(1, {nodes})" for i in (1, 2, 3)),
        f"{named('claim_ready').replace(':batch', '1')} \\gset",  # as broker.claim_ready_sql writes it
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        named("snapshot_indexes"),
        named("snapshot_job"),
        named("snapshot_job_allocations"),
        named("snapshot_job_versions_used"),
        named("snapshot_usage"),
        named("snapshot_ports"),
        named("snapshot_config"),
        named("snapshot_deployment"),
        named("snapshot_nodes"),  # no rows: :known_index is the current one, as a worker's cache
        named("snapshot_preemptible").replace(":max_priority", "NULL"),  # off for service jobs: no scan
        # The next snapshot reads the usage rows changed since this one, as a worker's cache does.
        "SELECT state_index_safe() AS known_usage \\gset",
        "COMMIT",
        "BEGIN",
        named("wake_listeners"),
        "SELECT id FROM evaluations WHERE id = :id AND lease_token = :lease_token AND status = 'pending'",
        f"{plan} RETURNING id AS plan_id \\gset",
        "COMMIT",
        "SELECT array_agg(id) AS node_ids FROM bench_nodes WHERE k IN (:k1, :k2, :k3) \\gset",
        "BEGIN",
        named("next_plans", limit="one", exclude="no_ids"),
        named("take_index", tables="apply_tables", notify="apply_notify"),
        named("fence_term"),
        "SELECT CAST(ARRAY[CAST(:id AS uuid)] AS text) AS eval_ids, "
        "CAST(ARRAY[CAST(:plan_id AS bigint)] AS text) AS plan_ids \\gset",
        named("evals_still_owned", ids="eval_ids"),
        named("plan_check_nodes", ids="node_ids"),
        named("plan_node_usage", ids="node_ids"),
        named("plan_node_ports", ids="node_ids"),
        named("plan_touched_allocs", ids="no_ids"),
        f"{deployment} RETURNING id AS deployment_id \\gset",
        f"{allocations} CROSS JOIN unnest(CAST(:node_ids AS uuid[])) WITH ORDINALITY AS u (id, o) "
        "JOIN nodes n ON n.id = u.id",
        named("complete_evals", plans="plan_ids"),
        named("plan_record_status", ids="plan_ids", statuses="applied_statuses"),
        result,
        "COMMIT",
    ]
    return "\n".join(step if step.endswith("\\gset") or step.startswith("\\set") else step + ";" for step in steps)


def prepare(conn: psycopg.Connection[tuple[object, ...]], jobs: int) -> None:
    """Templates from the pipeline's own rows, then the pipeline's work undone and one pending
    evaluation per job again. TRUNCATE skips the usage triggers, so node_usage goes too."""
    conn.execute("CREATE TABLE bench_nodes AS SELECT row_number() OVER (ORDER BY id) AS k, id FROM nodes")
    conn.execute("ALTER TABLE bench_nodes ADD PRIMARY KEY (k)")
    for table, where in [
        ("deployments", "true"),
        ("allocations", "desired_status = 'run'"),
        ("plans", "status = 'applied'"),
        ("plan_results", "true"),
    ]:
        conn.execute(f"CREATE TABLE bench_{table} AS SELECT * FROM {table} WHERE {where} LIMIT 1")
    conn.execute("TRUNCATE plan_results, plans, allocations, node_usage, deployments, evaluations CASCADE")
    conn.execute(
        "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status, "
        "create_index, modify_index) SELECT gen_random_uuid(), namespace, id, priority, type, 'job-register', "
        "job_modify_index, 'pending', state_index_own(), state_index_own() FROM jobs"
    )
    conn.execute("VACUUM ANALYZE")
    count = conn.execute("SELECT count(*) FROM evaluations").fetchone()
    assert count is not None and int(str(count[0])) == jobs


def run(url: str, jobs: int, clients: int) -> Ceiling:
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        prepare(conn, jobs)
        nodes = conn.execute("SELECT count(*) FROM bench_nodes").fetchone()
        term = conn.execute("SELECT term FROM leader_terms WHERE role = 'applier'").fetchone()
        known = conn.execute(
            "SELECT COALESCE(max(value), 0) FROM state_index WHERE name = 'nodes' AND value <= state_index_safe()"
        ).fetchone()
        assert nodes is not None and term is not None and known is not None
        text = script(conn, int(str(nodes[0])))
    variables = {
        "types": "{service,batch,system,sysbatch}",
        "owner": "pgbench",
        "lease_s": "60",
        "versions": "{}",
        "known_index": str(known[0]),
        "known_usage": "0",  # each client's first snapshot: every row changed since the migration
        "delta": str(PRIORITY_DELTA),
        "no_ids": "{}",
        "role": "applier",
        "term": str(term[0]),
        "apply_tables": "{allocations,evaluations,deployments,jobs}",
        "apply_notify": "true",
        "one": "1",
        "applied_statuses": "{applied}",
        "verdicts": "1:3:0:0:0:c",  # as long as one plan's entry
    }
    return _pgbench(url, text, variables, jobs, clients)


def _pgbench(url: str, text: str, variables: dict[str, str], jobs: int, clients: int) -> Ceiling:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as file:
        file.write(text)
    defines = [arg for name, value in variables.items() for arg in ("-D", f"{name}={value}")]
    postgres = PostgresCpu(url)
    pg_before, children_before = postgres.seconds(), _children_cpu()
    out = subprocess.run(
        [pgbench(), "-n", "-M", "prepared", *defines, "-f", file.name, *_clients(jobs, clients), libpq_url(url)],
        capture_output=True,
        text=True,
        check=False,
    )
    _wait_disconnected(url)  # a backend's CPU is counted once the postmaster has reaped it
    pg_seconds, pgbench_seconds = postgres.seconds() - pg_before, _children_cpu() - children_before
    match = re.search(r"tps = ([\d.]+)", out.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", out.stdout)
    if match is None or out.returncode != 0 or (failed and int(failed.group(1))):
        raise RuntimeError(f"pgbench failed (script kept in {file.name}):\n{out.stdout}\n{out.stderr[-3000:]}")
    Path(file.name).unlink()
    done = jobs // clients * clients
    _check_done(url, done)
    return Ceiling(float(match.group(1)), pg_seconds / done, pgbench_seconds / done)


def _wait_disconnected(url: str) -> None:
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        for _ in range(100):
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'").fetchone()
            if row is not None and row[0] == 0:
                break
            time.sleep(0.05)
    time.sleep(0.2)


def _check_done(url: str, done: int) -> None:
    """The script did the work: every evaluation complete, three allocations each (fewer only
    when two of the three random nodes were the same)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM evaluations WHERE status = 'complete'), (SELECT count(*) FROM allocations), "
            "(SELECT count(*) FROM plan_results)"
        ).fetchone()
    assert row is not None
    complete, allocations, results = (int(str(v)) for v in row)
    if complete != done or results != done or not 2.9 * done <= allocations <= 3 * done:
        raise RuntimeError(f"pgbench did not do the work: {complete} complete, {results} results, {allocations} allocs")


def _clients(jobs: int, clients: int) -> list[str]:
    """Every evaluation once: `clients` connections (and threads), jobs // clients each."""
    return ["-c", str(clients), "-j", str(clients), "-t", str(jobs // clients)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
