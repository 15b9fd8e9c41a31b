"""The applier alone: N plans of 3 placements each on M nodes, written as rows (each with its
evaluation's completion, as a worker sends its last plan) before the applier starts; then one
`corral applier` process applies them. The clock runs from the applier taking its term to the
last plan's result. Each round runs the pipelined applier (CORRAL_APPLIER_BATCH=64, the
default, or BENCH_APPLIER_BATCH; the next batch checked while one commits, the default) and, as
its peers in the same run, the same batches without the pipeline (CORRAL_APPLIER_PIPELINE=false)
and one plan per transaction (CORRAL_APPLIER_BATCH=1), on the same database with the same plans.
With BENCH_APPLIER_PEER (another checkout's `corral`), each round also runs that applier
pipelined, so two versions compare in one run. Prints plans/s, placements/s, the ratios and the
load average, and the median of the rounds.

Usage: uv run python -m bench.applier [plans] [nodes] [rounds]
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import psycopg
from psycopg.types.json import Jsonb

from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.pipeline.codecs.plan_codec import encode_plan
from app.store.job.jobs import RegisterOptions, register_job
from app.structs import Allocation, Plan, Resources
from bench.common import add_nodes, bench_database
from bench.storm import CORRAL

PLACEMENTS = 3
TARGET_PLANS_PER_S = 2_000  # issue 21: plans of 3 placements, on this 2-core machine
# BENCH_APPLIER_BATCH: the batched runs' bound (CORRAL_APPLIER_BATCH), 64 (the default) unless set.
# Each mode: (CORRAL_APPLIER_BATCH, CORRAL_APPLIER_PIPELINE, the `corral` executable).
BATCH = os.environ.get("BENCH_APPLIER_BATCH", "64")
MODES = {
    "pipelined": (BATCH, "true", CORRAL),
    "batched": (BATCH, "false", CORRAL),
    "one per commit": ("1", "false", CORRAL),
}
# BENCH_APPLIER_PEER: another checkout's `corral` (say, .venv/bin/corral of a git worktree at an
# earlier commit), run pipelined as one more mode of each round, to compare two versions of the
# applier on the same database, plans and machine state. The peer must accept this checkout's
# schema: an applier older than the newest revision's tolerance refuses it and the round stops
# with its exit code.
PEER = os.environ.get("BENCH_APPLIER_PEER")
if PEER:
    MODES["peer pipelined"] = (BATCH, "true", PEER)
INSERT_PLAN = (
    "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, snapshot_index, "
    "node_update, node_allocation, node_preemptions, deployment, deployment_updates, completion) "
    "VALUES (%(eval_id)s, %(token)s, 1, 'default', %(job_id)s, 50, false, 0, '{}', %(node_allocation)s, '{}', "
    "NULL, '[]', %(completion)s)"
)


def register_jobs(url: str, count: int) -> None:
    engine = make_engine(url, "cli")
    sessions = make_sessionmaker(engine)
    for i in range(count):
        spec = normalize_job(
            {
                "ID": f"bench-{i:05}",
                "Datacenters": ["dc1"],
                "TaskGroups": [
                    {
                        "Name": "g",
                        "Count": PLACEMENTS,
                        "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 50, "MemoryMB": 32}}],
                    }
                ],
            }
        )
        with transaction(sessions) as session:
            register_job(session, spec, RegisterOptions())
    engine.dispose()


def prepare(conn: psycopg.Connection[tuple[object, ...]], rng: random.Random) -> int:
    """Fresh state for one run: no allocations or plans, every evaluation leased anew, and one
    pending plan per evaluation. Returns the applier's current term (0 before the first)."""
    conn.execute("DELETE FROM allocations")
    conn.execute("DELETE FROM plans")
    leased = conn.execute(
        "UPDATE evaluations SET status = 'pending', lease_token = gen_random_uuid(), lease_owner = 'bench', "
        "lease_expires_at = now() + interval '1 hour' RETURNING id, job_id, lease_token"
    ).fetchall()
    nodes = [uuid.UUID(str(row[0])) for row in conn.execute("SELECT id FROM nodes").fetchall()]
    rows = []
    for eval_id, job_id, token in leased:
        assert isinstance(eval_id, uuid.UUID) and isinstance(token, uuid.UUID)
        rows.append(_plan_row(eval_id, str(job_id), token, nodes, rng))
    conn.cursor().executemany(INSERT_PLAN, rows)
    conn.commit()
    # Statistics as autovacuum keeps them: with none taken since every evaluation was leased at
    # once, the planner believes one evaluation is in flight and reads all 3,000 through the
    # in-flight index for each batch's lease check (2-3 ms a batch, found with EXPLAIN).
    conn.autocommit = True
    conn.execute("VACUUM ANALYZE evaluations, plans, allocations, plan_results, node_usage")
    conn.autocommit = False
    term = conn.execute("SELECT coalesce(max(term), 0) FROM leader_terms WHERE role = 'applier'").fetchone()
    conn.commit()
    assert term is not None and isinstance(term[0], int)
    return term[0]


def _plan_row(
    eval_id: uuid.UUID, job_id: str, token: uuid.UUID, nodes: list[uuid.UUID], rng: random.Random
) -> dict[str, object]:
    allocs: dict[uuid.UUID, list[Allocation]] = {}
    for i in range(PLACEMENTS):
        node = rng.choice(nodes)
        allocs.setdefault(node, []).append(
            Allocation(
                id=uuid.uuid4(),
                namespace="default",
                job_id=job_id,
                job_version=0,
                task_group="g",
                name=f"{job_id}.g[{i}]",
                node_id=node,
                eval_id=eval_id,
                desired_status="run",
                client_status="pending",
                resources=Resources(cpu=50, memory_mb=32, disk_mb=10),
            )
        )
    plan = Plan(eval_id, 50, 0, node_allocation={n: tuple(a) for n, a in allocs.items()})
    completion = {
        "SnapshotIndex": 0,
        "QueuedAllocations": {"g": 0},
        "ClassEligibility": {},
        "EscapedComputedClass": False,
        "ScheduledAt": datetime.now(UTC).isoformat(),
        "Description": "",
    }
    return {
        "eval_id": eval_id,
        "token": token,
        "job_id": job_id,
        "node_allocation": Jsonb(encode_plan(plan, "default", job_id)["node_allocation"]),
        "completion": Jsonb(completion),
    }


def run(url: str, mode: tuple[str, str, str], plans: int, rng: random.Random) -> float:
    """Seconds from the applier taking its term to the last plan's result."""
    with psycopg.connect(libpq_url(url)) as conn:
        term = prepare(conn, rng)
        batch, pipeline, corral = mode
        env = {
            **os.environ,
            "CORRAL_DATABASE_URL": url,
            "CORRAL_LOG_LEVEL": "warning",
            "CORRAL_APPLIER_BATCH": batch,
            "CORRAL_APPLIER_PIPELINE": pipeline,
        }
        applier = subprocess.Popen([corral, "applier"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conn.autocommit = True
        last = _scalar(conn, "SELECT max(id) FROM plans")
        try:
            while _scalar(conn, "SELECT coalesce(max(term), 0) FROM leader_terms WHERE role = 'applier'") <= term:
                _alive(applier, corral)
                time.sleep(0.005)
            began = time.monotonic()
            # The plans share one priority, so the last submitted is applied last: a primary-key
            # probe for its result, microseconds on the server, where counting the pending plans
            # every 5 ms cost about 1 ms a probe (pg_stat_statements).
            while not _scalar(conn, f"SELECT count(*) FROM plan_results WHERE plan_id = {last}"):
                _alive(applier, corral)
                time.sleep(0.005)
            elapsed = time.monotonic() - began
            completed = _scalar(conn, "SELECT count(*) FROM plan_results WHERE completed_eval")
            placed = _scalar(conn, "SELECT count(*) FROM allocations")
        finally:
            applier.send_signal(signal.SIGTERM)
            applier.wait(30)
    if completed != plans or placed != plans * PLACEMENTS:
        raise RuntimeError(f"{completed} evaluations completed and {placed} placed, expected {plans} and {plans * 3}")
    return elapsed


def _alive(applier: subprocess.Popen[bytes], corral: str) -> None:
    """Stop waiting for an applier that has exited (a peer checkout refuses a schema newer than its
    own, for one), rather than wait for its term forever."""
    if applier.poll() is not None:
        raise RuntimeError(f"{corral} applier exited with {applier.returncode} before applying the plans")


def _scalar(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None and isinstance(row[0], int), (sql, row)
    return row[0]


def main(plans: int, nodes: int, rounds: int) -> None:
    rng = random.Random(21)
    with bench_database() as url:
        add_nodes(url, nodes, cpu=4000, memory_mb=16384)
        register_jobs(url, plans)
        timings: dict[str, list[float]] = {name: [] for name in MODES}
        print(f"{plans:,} plans x {PLACEMENTS} placements on {nodes:,} nodes, {rounds} rounds")
        for r in range(rounds):
            for name, mode in MODES.items():
                elapsed = run(url, mode, plans, rng)
                timings[name].append(elapsed)
                load = os.getloadavg()[0]
                print(f"  round {r + 1} {name:>15}: {plans / elapsed:8.1f} plans/s  load average {load:.1f}")
    medians = {name: statistics.median(t) for name, t in timings.items()}
    for name, elapsed in medians.items():
        rate = plans / elapsed
        print(f"median {name:>15}: {rate:8.1f} plans/s  {rate * PLACEMENTS:9.1f} placements/s")
    print(f"pipelined / batched: {medians['batched'] / medians['pipelined']:.2f}x")
    print(f"batched / one per commit: {medians['one per commit'] / medians['batched']:.2f}x")
    if PEER:
        print(f"pipelined / peer pipelined ({PEER}): {medians['peer pipelined'] / medians['pipelined']:.2f}x")
    target = plans / medians["pipelined"] / TARGET_PLANS_PER_S
    print(f"pipelined / issue 21's target of {TARGET_PLANS_PER_S:,} plans/s: {target:.2f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [3_000, 1_000, 3][len(args) :]))
