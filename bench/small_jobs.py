"""Many small jobs: 5,000 service jobs of count 3 on 1,000 nodes, scheduled by one and then by
two workers (one applier). All jobs are registered first; the clock runs from starting the
workers to the last evaluation done. Prints evaluations/s and placements/s for each run and
the two-worker speed-up.

Usage: uv run python -m bench.small_jobs [jobs] [nodes]
"""

from __future__ import annotations

import signal
import sys
import time

from app.db.engines import make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.store.jobs import RegisterOptions, register_job
from bench.common import add_nodes, bench_database
from bench.storm import query, start, wait_quiet


def run(jobs: int, nodes: int, workers: int) -> tuple[float, float]:
    with bench_database() as url:
        add_nodes(url, nodes, cpu=4000, memory_mb=16384)
        engine = make_engine(url, "cli")
        sessions = make_sessionmaker(engine)
        for i in range(jobs):
            spec = normalize_job(
                {
                    "ID": f"svc-{i:05}",
                    "Datacenters": ["dc1"],
                    "TaskGroups": [
                        {
                            "Name": "g",
                            "Count": 3,
                            "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 50, "MemoryMB": 32}}],
                        }
                    ],
                }
            )
            with transaction(sessions) as session:
                register_job(session, spec, RegisterOptions())
        applier = start("applier", url)
        time.sleep(2)
        began = time.monotonic()
        roles = [applier] + [start("worker", url) for _ in range(workers)]
        wait_quiet(url)
        elapsed = time.monotonic() - began
        evals = int(query(url, "SELECT count(*) FROM evaluations WHERE status = 'complete'")[0])
        placed = int(query(url, "SELECT count(*) FROM allocations WHERE desired_status = 'run'")[0])
        for proc in roles:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        engine.dispose()
        return evals / elapsed, placed / elapsed


def main(jobs: int, nodes: int) -> None:
    results = {workers: run(jobs, nodes, workers) for workers in (1, 2)}
    print(f"{jobs:,} service jobs x count 3 on {nodes:,} nodes")
    for workers, (evals, placements) in results.items():
        print(f"  {workers} worker(s): {evals:7.1f} evaluations/s  {placements:8.1f} placements/s")
    print(f"  speed-up with 2 workers: {results[2][0] / results[1][0]:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000, int(sys.argv[2]) if len(sys.argv) > 2 else 1_000)
