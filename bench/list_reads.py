"""What an operator's reads cost the servers on a cluster with many jobs: the CPU of the
`corral server` processes and of Postgres per request, and the wall time, for the job list, the
allocation list and one job's reads, beside the same server's floor (an unknown path: the whole
HTTP stack and no database read) measured in the same run.

The cluster: `--jobs` batch jobs of `--count` allocations each (default 500 of 5, the operator
load `bench.fleet` builds over a 10,000-node ramp), registered through the API; their
allocations written straight through SQL (one node with room for all of them, a mix of client
statuses, every evaluation complete), as a cluster that ran them would hold them. No worker or
client runs, so nothing else moves the figures.

Usage: uv run python -m bench.list_reads [--jobs 500] [--count 5] [--requests 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import httpx
import psutil
import psycopg

from app.db.engines import libpq_url
from bench.api_cpu import api_server, server_cpu
from bench.common import bench_database
from bench.cpu import PostgresCpu, load_average

STATUSES = ("running", "complete", "failed", "pending", "lost")


def batch_job(job_id: str, count: int) -> dict[str, object]:
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 10}}
    return {"ID": job_id, "Type": "batch", "TaskGroups": [{"Name": "g", "Count": count, "Tasks": [task]}]}


def populate(base: str, url: str, jobs: int, count: int) -> None:
    with httpx.Client(base_url=base, timeout=60) as http:
        for i in range(jobs):
            http.put("/v1/jobs", json={"Job": batch_job(f"op-{i:04}", count)}).raise_for_status()
    node = uuid.uuid4()
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute(
            "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
            "status_updated_at, scheduling_eligibility, drivers, cpu_shares, memory_mb, disk_mb, create_index, "
            "modify_index) VALUES (%s, 'x', 'big', 'dc1', 'default', 'v1:bench', 'ready', now(), 'eligible', "
            '\'{"mock": {"Healthy": true}}\', 10000000, 10000000, 10000000, 1, 1)',
            (node,),
        )
        conn.execute(
            "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
            "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
            "modify_index, alloc_modify_index) "
            "SELECT gen_random_uuid(), j.namespace, j.id, j.version, e.id, %s, 'big', 'g', "
            "j.id || '.g[' || (k - 1) || ']', 'run', (%s::text[])[1 + k %% %s], 10, 10, 10, 10, "
            "state_index_own(), state_index_own(), state_index_own() "
            "FROM jobs j JOIN evaluations e ON e.namespace = j.namespace AND e.job_id = j.id "
            "CROSS JOIN generate_series(1, %s) k",
            (node, list(STATUSES), len(STATUSES), count),
        )
        conn.execute("UPDATE evaluations SET status = 'complete'")
        conn.execute("INSERT INTO state_index (name, value) VALUES ('allocations', state_index_own())")
        conn.execute("ANALYZE")


def measure(
    http: httpx.Client, path: str, requests: int, server: psutil.Process, postgres: PostgresCpu
) -> tuple[float, float, float]:
    """Median wall ms, server CPU ms and Postgres CPU ms per request of `path`."""
    for _ in range(3):  # warm: each worker's prepared statements and caches
        http.get(path)
    walls = []
    cpu_before, pg_before = server_cpu(server), postgres.seconds()
    for _ in range(requests):
        began = time.perf_counter()
        reply = http.get(path)
        walls.append(time.perf_counter() - began)
        assert reply.status_code in (200, 404), f"{path}: {reply.status_code} {reply.text[:200]}"
    cpu, pg = server_cpu(server) - cpu_before, postgres.seconds() - pg_before
    return statistics.median(walls) * 1000, cpu * 1000 / requests, pg * 1000 / requests


def main(jobs: int, count: int, requests: int) -> None:
    with bench_database() as url, api_server(url) as (base, server):
        began = time.monotonic()
        populate(base, url, jobs, count)
        print(f"{jobs:,} jobs of {count} allocations registered in {time.monotonic() - began:.1f} s")
        postgres = PostgresCpu(url)
        routes: list[tuple[str, str]] = [
            ("unknown path (404, the floor)", "/v1/no-such-route"),
            (f"job list ({jobs:,} jobs)", "/v1/jobs"),
            (f"allocation list ({jobs * count:,})", "/v1/allocations"),
            ("one job", "/v1/job/op-0007"),
            ("one job's summary", "/v1/job/op-0007/summary"),
            (f"one job's allocations ({count})", "/v1/job/op-0007/allocations"),
        ]
        with httpx.Client(base_url=base, timeout=120) as http:
            figures = {label: measure(http, path, requests, server, postgres) for label, path in routes}
        floor = figures[routes[0][0]][1]
        print(f"median of {requests} requests each, one at a time; load average {load_average()}")
        print(f"{'request':<34} {'wall ms':>9} {'server CPU ms':>14} {'Postgres CPU ms':>16} {'server/floor':>13}")
        for label, (wall, cpu, pg) in figures.items():
            ratio = f"{cpu / floor:.1f}x" if floor > 0 else "n/a"
            print(f"{label:<34} {wall:>9.1f} {cpu:>14.2f} {pg:>16.2f} {ratio:>13}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    main(args.jobs, args.count, args.requests)
