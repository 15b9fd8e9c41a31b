"""Broker throughput: claim + complete of no-op evaluations per second through corral's broker
(Python, the real claim/complete code: lease, fencing, state index, coalescing), against a bare
SQL loop (pgbench running the same claim statement and a bare completion) on the same Postgres
in the same run. Target: corral >= 50 % of the bare loop.

Usage: uv run python bench/broker.py [evaluations] [processes]
"""

from __future__ import annotations

import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
from multiprocessing.queues import Queue
from pathlib import Path
from queue import Empty

import psycopg

from app.db.engines import libpq_url, make_engine
from app.pipeline import broker
from app.pipeline.broker import Outcome
from bench.common import bench_database, pgbench

TYPES = ["service", "batch", "system", "sysbatch"]


def load_evaluations(url: str, n: int) -> None:
    """n jobs with one pending evaluation each (one job per eval: the broker serializes per job)."""
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute("DELETE FROM evaluations")
        conn.execute("DELETE FROM job_versions")
        conn.execute("DELETE FROM jobs")
        conn.execute(
            "INSERT INTO jobs (namespace, id, name, type, priority, status, status_updated_at, stop, version, "
            "job_modify_index, submit_time, datacenters, node_pool, periodic, parameterized, dispatched, all_at_once, "
            "stable, spec, create_index, modify_index) SELECT 'default', 'j' || i, 'j' || i, 'batch', 50, 'pending', "
            "now(), false, 0, 1, now(), '{dc1}', 'default', false, false, false, false, false, '{}', 1, 1 "
            "FROM generate_series(1, %s) i",
            (n,),
        )
        conn.execute(
            "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status, "
            "create_index, modify_index) SELECT gen_random_uuid(), 'default', 'j' || i, 50, 'batch', 'job-register', "
            "1, 'pending', i, i FROM generate_series(1, %s) i",
            (n,),
        )
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE evaluations")


def corral_worker(url: str, stop_at: float, out: Queue[int]) -> None:
    engine = make_engine(url, "worker", pool_size=2, pre_ping=False)
    done = 0
    while time.monotonic() < stop_at:
        held = broker.claim(engine, TYPES, "bench", 60, rescue=False)
        if held is None:
            break
        broker.complete_success(engine, held, Outcome(snapshot_index=0))
        done += 1
    out.put(done)
    engine.dispose()


def run_corral(url: str, n: int, processes: int, seconds: float) -> float:
    load_evaluations(url, n)
    queue: Queue[int] = multiprocessing.Queue()
    began = time.monotonic()
    workers = [
        multiprocessing.Process(target=corral_worker, args=(url, began + seconds, queue)) for _ in range(processes)
    ]
    for w in workers:
        w.start()
    total = sum(collect(queue, workers, seconds + 120))
    for w in workers:
        w.join()
    return total / (time.monotonic() - began)


def collect(
    queue: Queue[int],
    workers: list[multiprocessing.Process],
    limit_s: float,
) -> list[int]:
    """Each child's count. A child that died without reporting (an exception, a kill) ends the
    run with an error instead of a wait on the queue forever."""
    counts: list[int] = []
    deadline = time.monotonic() + limit_s
    while len(counts) < len(workers):
        try:
            counts.append(queue.get(timeout=0.5))
            continue
        except Empty:
            pass
        failed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
        if failed:
            raise RuntimeError(f"a benchmark process died (exit codes {failed}); see its traceback above")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(workers) - len(counts)} benchmark process(es) did not report in {limit_s:.0f} s")
    return counts


# The same commit discipline as corral: the claim (a lease) commits asynchronously, the
# completion waits for its flush. The claim still takes one statement: set_config(..., true)
# switches the commit of the statement's own implicit transaction.
BARE_SCRIPT = """
WITH candidate AS MATERIALIZED (
    SELECT e.id FROM evaluations e
    WHERE e.status = 'pending' AND e.lease_token IS NULL AND e.type = ANY('{service,batch,system,sysbatch}')
      AND (e.wait_until IS NULL OR e.wait_until <= now()) AND (e.not_before IS NULL OR e.not_before <= now())
      AND NOT EXISTS (SELECT 1 FROM evaluations f WHERE f.namespace = e.namespace AND f.job_id = e.job_id
                      AND f.lease_token IS NOT NULL)
      AND NOT (SELECT pause_eval_broker FROM scheduler_config WHERE id = 1)
      AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
    ORDER BY e.priority DESC, e.create_index LIMIT 1 FOR UPDATE OF e SKIP LOCKED)
UPDATE evaluations e SET lease_token = gen_random_uuid(), lease_owner = 'pgbench',
    lease_expires_at = now() + interval '60 seconds', delivery_count = e.delivery_count + 1
FROM candidate c WHERE e.id = c.id RETURNING e.id AS claimed \\gset
UPDATE evaluations SET status = 'complete', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
WHERE id = :claimed;
"""


def run_bare(url: str, n: int, clients: int, seconds: float) -> float:
    load_evaluations(url, n)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(BARE_SCRIPT)
    out = subprocess.run(
        [
            pgbench(),
            "-n",
            "-M",
            "prepared",
            "-f",
            script.name,
            "-c",
            str(clients),
            "-j",
            str(clients),
            "-T",
            str(int(seconds)),
            libpq_url(url),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    Path(script.name).unlink()
    match = re.search(r"tps = ([\d.]+)", out.stdout)
    if match is None:
        raise RuntimeError(f"pgbench failed:\n{out.stdout}\n{out.stderr}")
    return float(match.group(1))


def main(n: int, processes: int) -> None:
    seconds = 10.0
    with bench_database() as url:
        rows = []
        for clients in sorted({1, processes}):
            bare = run_bare(url, n, clients, seconds)
            ours = run_corral(url, n, clients, seconds)
            rows.append((clients, bare, ours))
        print(f"{'clients':>7} {'bare SQL evals/s':>17} {'corral evals/s':>15} {'ratio':>6}   (target ratio >= 0.50)")
        for clients, bare, ours in rows:
            print(f"{clients:>7} {bare:>17.0f} {ours:>15.0f} {ours / bare:>6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, int(sys.argv[2]) if len(sys.argv) > 2 else 2)
