"""The ceiling for bench.small_jobs: the statements the pipeline issues for a batch of small
service jobs' evaluations, run bare by pgbench (no Python), on the database the pipeline just
worked in, with as many clients as the pipeline had scheduling loops (workers x
num_schedulers), each taking as many evaluations at once as a loop claims (eval_batch).

The statements are corral's own, loaded by name from sql/queries (so the ceiling follows them
when they change), found with pg_stat_statements on a run of the pipeline; per batch of K
evaluations, in the pipeline's transactions:
  1. the claim: claim_ready of up to K evaluations (the LIMIT written in, as
     broker.claim_ready_sql does), autocommitted, asynchronous commit;
  2. the snapshot, REPEATABLE READ READ ONLY (SnapshotLoader.load_batch): the cluster once,
     snapshot_indexes, snapshot_usage, snapshot_ports, snapshot_config and snapshot_nodes (no
     rows: the nodes come from the worker's cache); the jobs, with K = 1 snapshot_job,
     snapshot_job_allocations, snapshot_job_versions_used and snapshot_deployment, with more
     the same four at once over arrays of the jobs (snapshot_jobs, ...; generic plans forced);
     per job snapshot_preemptible (off for service jobs: no scan); snapshot_usage returns the
     rows changed since the client's previous snapshot, as a worker's usage cache asks;
  3. the submit, one transaction for the K plans (plans.submit_batch): per plan
     wake_listeners, the lease check, INSERT INTO plans (the pipeline sends these as one
     statement, submit_plan, whose JSON parameters pgbench cannot pass);
  4. the apply, one transaction for the K plans (the applier's group commit): next_plans,
     take_index, fence_term, evals_still_owned, plan_check_nodes, plan_node_usage,
     plan_node_ports, plan_touched_allocs, the deployments, the new allocations (one
     INSERT ... SELECT where the applier sends a COPY; the same triggers fire), complete_evals
     (the evaluations completed with their plans), plan_record_status with the NOTIFY that
     carries the verdicts (so the worker reads no result), the plan_results.
Left out, as the pipeline's own overhead rather than its work: SAVEPOINTs, the result reads of
a worker whose notification did not tell its verdict, lease renewals, session set-up. Added:
one statement per batch that picks three random nodes a plan by primary key (the scheduler's
choice, made in Python in the pipeline). The plan, result, deployment and allocation payloads
are copies of rows the pipeline wrote, so they are as large. The pipeline's applier commits
plans of every loop together (up to applier_batch); here each client applies its own batch.
With K = 1 this is the one-at-a-time path (the workers' eval_batch 1).
"""

from __future__ import annotations

import re
import resource
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import LiteralString, Protocol

import psycopg

from app.db.engines import libpq_url
from app.pipeline.snapshot import GENERIC_PLANS, JOBS_READS, ONE_JOB_READS
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


class Catalog(Protocol):
    """Where the script reads the tables' column lists: a connection (or a test's stand-in)."""

    def execute(self, query: LiteralString, params: tuple[str], /) -> Iterable[Sequence[object]]: ...


def copy_insert(conn: Catalog, table: str, overrides: dict[str, str]) -> str:
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


PER_JOB = ("id", "namespace", "job_id", "lease_token", "plan_id", "deployment_id", "node_ids")


LEASE_CHECK = "SELECT id FROM evaluations WHERE id = :id AND lease_token = :lease_token AND status = 'pending'"


def for_job(sql: str, i: int) -> str:
    """`sql` about the batch's i-th job: its per-job variables suffixed with i."""
    return re.sub(rf":({'|'.join(PER_JOB)})\b", rf":\g<1>{i}", sql)


def _claim(batch: int) -> str:
    """claim_ready of up to `batch` evaluations (the literal LIMIT broker.claim_ready_sql
    writes), each claimed row's columns in variables of its own: id1, job_id1, ..."""
    columns = {"id": "id", "namespace": "namespace", "job_id": "job_id", "lease_token": "lease_token"}
    lists = ", ".join(f"array_agg({c} ORDER BY id) AS {c}s" for c in columns.values())
    picks = ", ".join(f"{c}s[{i}] AS {v}{i}" for i in range(1, batch + 1) for v, c in columns.items())
    # The batch's jobs as the snapshot's reads take them: two arrays that pair up.
    keys = "CAST(namespaces AS text) AS namespaces, CAST(job_ids AS text) AS job_ids"
    claim = named("claim_ready").replace(":batch", str(batch))
    listed = f"WITH claimed AS ({claim}), listed AS (SELECT {lists} FROM claimed)"
    return f"{listed} SELECT {picks}, {keys} FROM listed \\gset"


def _picks(batch: int, nodes: int) -> list[str]:
    """The scheduler's choice, made in Python in the pipeline: three random nodes a plan, and a
    deployment ID each; all the batch's nodes in one list for the applier's reads."""
    keys = {i: [f":k{i}_{j}" for j in (1, 2, 3)] for i in range(1, batch + 1)}
    sets = [f"\\set k{i}_{j} random(1, {nodes})" for i in keys for j in (1, 2, 3)]
    per_plan = ", ".join(
        f"(SELECT array_agg(id) FROM bench_nodes WHERE k IN ({', '.join(k)})) AS node_ids{i}, "
        f"gen_random_uuid() AS deployment_id{i}"
        for i, k in keys.items()
    )
    every = ", ".join(key for k in keys.values() for key in k)
    return [
        *sets,
        f"SELECT {per_plan}, (SELECT array_agg(id) FROM bench_nodes WHERE k IN ({every})) AS all_node_ids \\gset",
    ]


def _job_reads(batch: int) -> list[str]:
    """The jobs' reads as SnapshotLoader sends them: one job's by its key; several at once, by
    arrays of keys, with their generic plans forced."""
    if batch == 1:
        return [for_job(named(name), 1) for name in ONE_JOB_READS]
    return [GENERIC_PLANS, *(named(name) for name in JOBS_READS)]


def _each_plan(batch: int, columns: tuple[str, ...]) -> str:
    """A VALUES list of the batch's plans: one row each, `columns` of its per-job variables."""
    rows = ", ".join("(" + ", ".join(f":{c}{i}" for c in columns) + ")" for i in range(1, batch + 1))
    return f"(VALUES {rows}) AS p ({', '.join(columns)})"


def script(conn: Catalog, nodes: int, batch: int) -> str:
    deployments = copy_insert(
        conn,
        "deployments",
        {"id": "CAST(p.deployment_id AS uuid)", "job_id": "p.job_id", "create_index": "state_index_own()"},
    )
    allocations = copy_insert(
        conn,
        "allocations",
        {
            "id": "gen_random_uuid()",
            "job_id": "p.job_id",
            "eval_id": "CAST(p.id AS uuid)",
            "node_id": "n.id",
            "node_name": "n.name",
            "name": "p.job_id || '.g[' || (u.o - 1) || ']'",
            "deployment_id": "CAST(p.deployment_id AS uuid)",
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
    results = copy_insert(conn, "plan_results", {"plan_id": "CAST(p.plan_id AS bigint)", "applier_term": ":term"})
    jobs = range(1, batch + 1)
    ids = ", ".join(f"CAST(:id{i} AS uuid)" for i in jobs)
    plan_ids = ", ".join(f"CAST(:plan_id{i} AS bigint)" for i in jobs)
    steps = [
        _claim(batch),
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        # The cluster once, each job's reads beside it (SnapshotLoader.load_batch).
        named("snapshot_indexes"),
        named("snapshot_usage"),
        named("snapshot_ports"),
        named("snapshot_config"),
        named("snapshot_nodes"),  # no rows: :known_index is the current one, as a worker's cache
        # off for service jobs: no scan; sent before the jobs' reads (their generic plans)
        *(for_job(named("snapshot_preemptible").replace(":max_priority", "NULL"), i) for i in jobs),
        *_job_reads(batch),
        # The next snapshot reads the usage rows changed since this one, as a worker's cache does.
        "SELECT state_index_safe() AS known_usage \\gset",
        "COMMIT",
        # Every plan of the batch in one transaction (plans.submit_batch).
        "BEGIN",
        *(
            step
            for i in jobs
            for step in (
                named("wake_listeners"),
                for_job(LEASE_CHECK, i),
                f"{for_job(plan, i)} RETURNING id AS plan_id{i} \\gset",
            )
        ),
        "COMMIT",
        *_picks(batch, nodes),
        # The batch's plans applied in one transaction (the applier's group commit), one such
        # transaction at a time: the applier is the only writer of placements (concurrent ones
        # would also deadlock on node_usage rows, which the single applier never meets).
        "BEGIN",
        "SELECT pg_advisory_xact_lock(hashtext('bench_small_jobs_applier'))",
        named("next_plans", limit="batch", exclude="no_ids"),
        named("take_index", tables="apply_tables", notify="apply_notify"),
        named("fence_term"),
        f"SELECT CAST(ARRAY[{ids}] AS text) AS eval_ids, CAST(ARRAY[{plan_ids}] AS text) AS plan_ids \\gset",
        named("evals_still_owned", ids="eval_ids"),
        named("plan_check_nodes", ids="all_node_ids"),
        named("plan_node_usage", ids="all_node_ids"),
        named("plan_node_ports", ids="all_node_ids"),
        named("plan_touched_allocs", ids="no_ids"),
        f"{deployments} CROSS JOIN {_each_plan(batch, ('deployment_id', 'job_id'))}",
        f"{allocations} CROSS JOIN {_each_plan(batch, ('id', 'job_id', 'deployment_id', 'node_ids'))} "
        "CROSS JOIN LATERAL unnest(CAST(p.node_ids AS uuid[])) WITH ORDINALITY AS u (id, o) "
        "JOIN nodes n ON n.id = u.id",
        named("complete_evals", plans="plan_ids"),
        named("plan_record_status", ids="plan_ids", statuses="applied_statuses"),
        f"{results} CROSS JOIN {_each_plan(batch, ('plan_id',))}",
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


def run(url: str, jobs: int, clients: int, batch: int) -> Ceiling:
    """The ceiling with `clients` connections (the pipeline's scheduling loops), each claiming
    `batch` evaluations at once (its eval_batch)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        prepare(conn, jobs)
        nodes = conn.execute("SELECT count(*) FROM bench_nodes").fetchone()
        term = conn.execute("SELECT term FROM leader_terms WHERE role = 'applier'").fetchone()
        known = conn.execute(
            "SELECT COALESCE(max(value), 0) FROM state_index WHERE name = 'nodes' AND value <= state_index_safe()"
        ).fetchone()
        assert nodes is not None and term is not None and known is not None
        text = script(conn, int(str(nodes[0])), batch)
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
        "batch": str(batch),
        "applied_statuses": "{" + ",".join(["applied"] * batch) + "}",
        "verdicts": ",".join(["1:3:0:0:0:c"] * batch),  # as long as the batch's entries
    }
    return _pgbench(url, text, variables, jobs, clients, batch)


def _pgbench(url: str, text: str, variables: dict[str, str], jobs: int, clients: int, batch: int) -> Ceiling:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as file:
        file.write(text)
    defines = [arg for name, value in variables.items() for arg in ("-D", f"{name}={value}")]
    postgres = PostgresCpu(url)
    pg_before, children_before = postgres.seconds(), _children_cpu()
    flags = ["-n", "-M", "prepared", "--failures-detailed", "--verbose-errors", *defines]
    out = subprocess.run(
        [pgbench(), *flags, "-f", file.name, *_clients(jobs, clients, batch), libpq_url(url)],
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
    done = jobs // (clients * batch) * clients * batch
    _check_done(url, done)
    # pgbench's transactions are runs of the script: a batch of evaluations each.
    return Ceiling(float(match.group(1)) * batch, pg_seconds / done, pgbench_seconds / done)


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


def _clients(jobs: int, clients: int, batch: int) -> list[str]:
    """Every evaluation at most once: `clients` connections (and threads), each running the
    script (a batch of evaluations) jobs // (clients * batch) times."""
    return ["-c", str(clients), "-j", str(clients), "-t", str(jobs // (clients * batch))]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
