"""Many small jobs (issue 21 item 5): service jobs of count 3 (default 5,000) on 1,000 nodes,
scheduled by 1, 2 and 4 workers (one applier), each run in a fresh database on one Postgres
server. All jobs are registered and the roles started with the broker paused; the clock and the
CPU counters run from unpausing it to the last evaluation done. The nodes and jobs are loaded
once; each run works on a copy of that database.

Prints per worker count: evaluations/s, placements/s, the speed-up against one worker, CPU
seconds per evaluation of the workers, the applier and Postgres (every backend included), the
CPU bound (the rate at which that CPU per evaluation would keep every core busy, or every
worker process's Python, whichever is lower; the run's share of it), and the load average.
Then the ceiling, in the same database right after: the statements the pipeline issues per
batch of evaluations, bare in pgbench with a client per scheduling loop (workers x
num_schedulers), each taking eval_batch evaluations at once (bench/small_jobs_ceiling.py),
and the ratio pipeline / ceiling.

With `--affinity`, every job prefers its datacenter: the scheduler then scores up to 100 nodes
a placement (Nomad's limit with an affinity) instead of log2 of them, so a worker's Python
rather than the machine binds.

With `--peer-batch N`, each run is followed by the same run with the workers' eval_batch set
to N (1: one evaluation at a time, the path before batches), and the report adds its rate and
the ratio of the two: a peer from the same run, on a copy of the same database.

With `--worker-cpu Q`, each worker process is capped at Q cores in a cgroup of its own
(bench/small_jobs_quota.py): horizontal scaling as if each worker ran on a small host.

Usage: uv run python -m bench.small_jobs [--workers 1,2,4] [--jobs 5000] [--nodes 1000] [--repeat 1] [--affinity]
       [--peer-batch N] [--worker-cpu Q]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass

import psycopg

from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.settings.config import Settings
from app.store.job.jobs import RegisterOptions, register_job
from bench import small_jobs_ceiling
from bench.common import add_nodes, bench_database, bench_server, cloned_database
from bench.cpu import PostgresCpu, load_average, process_cpu
from bench.small_jobs_ceiling import Ceiling
from bench.storm import query, start, wait_quiet

Role = subprocess.Popen[bytes]


@dataclass(frozen=True)
class Run:
    workers: int
    evaluations: int
    placements: int
    seconds: float
    cpu: dict[str, float]  # role -> CPU seconds during the run
    load: str
    ceiling: Ceiling | None

    @property
    def evaluations_per_s(self) -> float:
        return self.evaluations / self.seconds

    def cpu_per_eval_ms(self, role: str) -> float:
        return self.cpu[role] / self.evaluations * 1000

    def cpu_bound(self, cores: int) -> tuple[float, str]:
        """The most evaluations/s this run's CPU per evaluation allows, and what binds: every
        core busy with the roles' work ("cores": cores / the workers', applier's and Postgres's
        CPU per evaluation together), or every worker process busy on one core ("GIL": its
        Python runs one thread at a time), whichever is lower."""
        by_cores = cores / (sum(self.cpu.values()) / self.evaluations)
        by_workers = self.workers / (self.cpu["workers"] / self.evaluations)
        return (by_cores, "cores") if by_cores <= by_workers else (by_workers, "GIL")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.small_jobs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=_counts, default=(1, 2, 4), help="worker counts, comma-separated")
    parser.add_argument("--jobs", type=_positive, default=5000)
    parser.add_argument("--nodes", type=_positive, default=1000)
    parser.add_argument("--repeat", type=_positive, default=1, help="runs per worker count (the median is printed)")
    parser.add_argument(
        "--affinity",
        action="store_true",
        help="give every job an affinity (the scheduler then scores up to 100 nodes a placement, not log2 of them)",
    )
    parser.add_argument(
        "--peer-batch",
        type=_positive,
        default=None,
        help="after each run, the same run with this eval_batch (1: one evaluation at a time) as its peer",
    )
    parser.add_argument(
        "--worker-cpu",
        type=float,
        default=None,
        metavar="Q",
        help="cap each worker process at Q cores in a cgroup of its own (root, cgroup v1), as if each ran on "
        "a small host; reports per-worker CPU, throttling and what binds (bench/small_jobs_quota.py)",
    )
    return parser.parse_args(argv)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(_positive(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of worker counts") from None
    return tuple(sorted(set(counts)))


# With --affinity: a preference every node meets, so the scheduler scores up to 100 feasible
# nodes a placement (Nomad's limit with an affinity or spread) instead of log2 of the nodes.
AFFINITY = {"LTarget": "${node.datacenter}", "RTarget": "dc1", "Operand": "=", "Weight": 50}


def register_jobs(url: str, jobs: int, affinity: bool = False) -> None:
    engine = make_engine(url, "cli")
    sessions = make_sessionmaker(engine)
    for i in range(jobs):
        group: dict[str, object] = {
            "Name": "g",
            "Count": 3,
            "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 50, "MemoryMB": 32}}],
        }
        if affinity:
            group["Affinities"] = [AFFINITY]
        spec = normalize_job({"ID": f"svc-{i:05}", "Datacenters": ["dc1"], "TaskGroups": [group]})
        with transaction(sessions) as session:
            register_job(session, spec, RegisterOptions())
    engine.dispose()


def set_paused(url: str, paused: bool) -> None:
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("UPDATE scheduler_config SET pause_eval_broker = %s WHERE id = 1", (paused,))


def wait_connected(url: str, workers: int, limit_s: float = 120) -> None:
    """Until every role has a session open (it has imported everything and is polling)."""
    deadline = time.monotonic() + limit_s
    sql = (
        "SELECT count(DISTINCT pid) FILTER (WHERE application_name = 'corral-worker'), "
        "count(*) FILTER (WHERE application_name = 'corral-applier') FROM pg_stat_activity"
    )
    while time.monotonic() < deadline:
        row = query(url, sql)
        if int(str(row[0])) >= workers and int(str(row[1])) >= 1:
            time.sleep(1)  # the last one's first poll
            return
        time.sleep(0.2)
    raise RuntimeError("the roles did not connect")


def run(admin: str, template: str, jobs: int, workers: int, eval_batch: int | None = None) -> Run:
    """One run on a copy of the template; with `eval_batch`, the workers' batch size is that,
    and no ceiling is measured (Run.ceiling is None)."""
    settings = {"CORRAL_EVAL_BATCH": str(eval_batch)} if eval_batch is not None else None
    shape = Settings(database_url=template)  # the roles read this environment as well
    with cloned_database(admin, template) as url:
        applier = start("applier", url)
        pool = [start("worker", url, settings) for _ in range(workers)]
        wait_connected(url, workers)
        postgres = PostgresCpu(url)
        before = _cpu(postgres, applier, pool)
        load = load_average()
        began = time.monotonic()
        set_paused(url, False)
        wait_quiet(url)
        elapsed = time.monotonic() - began
        after = _cpu(postgres, applier, pool)
        load = f"{load} -> {load_average()}"
        evals = int(str(query(url, "SELECT count(*) FROM evaluations WHERE status = 'complete'")[0]))
        placed = int(str(query(url, "SELECT count(*) FROM allocations WHERE desired_status = 'run'")[0]))
        _stop([applier, *pool])
        ceiling = (
            small_jobs_ceiling.run(url, jobs, workers * shape.num_schedulers, shape.eval_batch)
            if eval_batch is None
            else None
        )
    cpu = {role: after[role] - before[role] for role in after}
    return Run(workers, evals, placed, elapsed, cpu, load, ceiling)


def _cpu(
    postgres: PostgresCpu, applier: subprocess.Popen[bytes], pool: list[subprocess.Popen[bytes]]
) -> dict[str, float]:
    return {
        "workers": process_cpu(p.pid for p in pool),
        "applier": process_cpu([applier.pid]),
        "postgres": postgres.seconds(),
    }


def _stop(processes: list[Role]) -> None:
    for proc in processes:
        proc.send_signal(signal.SIGTERM)
    for proc in processes:
        proc.wait(30)


def median_run(runs: list[Run]) -> Run:
    """The run with the median evaluation rate (its own CPU and ceiling figures with it)."""
    return sorted(runs, key=lambda r: r.evaluations_per_s)[len(runs) // 2]


def report(
    results: dict[int, list[Run]],
    jobs: int,
    nodes: int,
    peers: dict[int, list[Run]],
    peer_batch: int | None,
    affinity: bool = False,
) -> None:
    kind = "service jobs with an affinity" if affinity else "service jobs"
    print(f"{jobs:,} {kind} x count 3 on {nodes:,} nodes, one applier; median of {len(results[min(results)])}")
    peer_header = f" {f'batch {peer_batch} ev/s':>14} {'ratio':>6}" if peer_batch is not None else ""
    print(
        f"{'workers':>7} {'evals/s':>8} {'placed/s':>9} {'speed-up':>8} {'worker ms/ev':>12} {'applier ms/ev':>13} "
        f"{'pg ms/ev':>8} {'cpu bound':>15} {'of it':>5} {'ceiling ev/s':>12} {'pg ms/ev':>8} {'pipeline/ceiling':>16}"
        f"{peer_header}  load average"
    )
    cores = os.cpu_count() or 1
    base = median_run(results[min(results)]).evaluations_per_s
    for workers, runs in results.items():
        r = median_run(runs)
        assert r.ceiling is not None
        spread = ", ".join(f"{x.evaluations_per_s:.1f}" for x in runs)
        peer = ""
        if peer_batch is not None:
            p = median_run(peers[workers])
            peer = f" {p.evaluations_per_s:>14.1f} {r.evaluations_per_s / p.evaluations_per_s:>5.2f}x"
            spread += "; peer: " + ", ".join(f"{x.evaluations_per_s:.1f}" for x in peers[workers])
        print(
            f"{workers:>7} {r.evaluations_per_s:>8.1f} {r.placements / r.seconds:>9.1f} "
            f"{r.evaluations_per_s / base:>7.2f}x {r.cpu_per_eval_ms('workers'):>12.2f} "
            f"{r.cpu_per_eval_ms('applier'):>13.2f} {r.cpu_per_eval_ms('postgres'):>8.2f} "
            f"{_bound(r, cores):>15} {r.evaluations_per_s / r.cpu_bound(cores)[0]:>5.2f} "
            f"{r.ceiling.evaluations_per_s:>12.1f} {r.ceiling.postgres_cpu_per_eval * 1000:>8.2f} "
            f"{r.evaluations_per_s / r.ceiling.evaluations_per_s:>16.2f}{peer}  {r.load}  (runs: {spread} evals/s)"
        )
    print("speed-up is against the smallest worker count; cpu bound: the rate at which this run's CPU per")
    print(f"evaluation would keep all {cores} cores busy (cores), or every worker process's one thread of")
    print("Python at a time (GIL), the lower; of it: the run's rate over that bound. ceiling: the same")
    print("statements bare in pgbench, a client per scheduling loop, each taking eval_batch evaluations at a")
    print("time, same Postgres, same run. pgbench's own CPU per evaluation (not in its")
    print(
        "pg ms/ev): "
        + ", ".join(
            f"{w}: {_ceiling(median_run(runs)).pgbench_cpu_per_eval * 1000:.2f} ms" for w, runs in results.items()
        )
    )
    if peer_batch is not None:
        print(f"peer: each run again with the workers' eval_batch {peer_batch}, right after it, on a copy of the")
        print("same database; ratio: this run's rate over the peer's (medians). CPU ms per evaluation of the peers:")
        for workers, runs in peers.items():
            p = median_run(runs)
            print(
                f"  {workers} worker(s): workers {p.cpu_per_eval_ms('workers'):.2f}, applier "
                f"{p.cpu_per_eval_ms('applier'):.2f}, Postgres {p.cpu_per_eval_ms('postgres'):.2f}"
            )


def _bound(r: Run, cores: int) -> str:
    rate, by = r.cpu_bound(cores)
    return f"{rate:.1f} ({by})"


def _ceiling(r: Run) -> Ceiling:
    assert r.ceiling is not None
    return r.ceiling


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with bench_server() as admin, bench_database(admin) as template:
        # Nodes and jobs once, registered through corral's own code; each run gets a copy.
        add_nodes(template, args.nodes, cpu=4000, memory_mb=16384)
        register_jobs(template, args.jobs, args.affinity)
        set_paused(template, True)
        if args.worker_cpu is not None:
            _quota_runs(admin, template, args)
            return
        results: dict[int, list[Run]] = {}
        peers: dict[int, list[Run]] = {}
        for workers in args.workers:
            for _ in range(args.repeat):
                r = run(admin, template, args.jobs, workers)
                results.setdefault(workers, []).append(r)
                print(
                    f"run: {workers} worker(s) {r.evaluations_per_s:.1f} evaluations/s, ceiling "
                    f"{_ceiling(r).evaluations_per_s:.1f}/s, load average {r.load}",
                    flush=True,
                )
                if args.peer_batch is not None:
                    p = run(admin, template, args.jobs, workers, args.peer_batch)
                    peers.setdefault(workers, []).append(p)
                    print(
                        f"peer: {workers} worker(s), eval_batch {args.peer_batch}: {p.evaluations_per_s:.1f} "
                        f"evaluations/s, load average {p.load}",
                        flush=True,
                    )
    report(results, args.jobs, args.nodes, peers, args.peer_batch, args.affinity)
    if len(args.workers) > 1:
        base = statistics.median(r.evaluations_per_s for r in results[args.workers[0]])
        cores = os.cpu_count() or 1
        bound = median_run(results[args.workers[0]]).cpu_bound(cores)[0]
        ratios = [
            f"{w} vs {args.workers[0]}: {statistics.median(r.evaluations_per_s for r in results[w]) / base:.2f}x "
            f"(cpu bounds: {median_run(results[w]).cpu_bound(cores)[0] / bound:.2f}x)"
            for w in args.workers[1:]
        ]
        print("evaluation-rate ratios: " + ", ".join(ratios))


def _quota_runs(admin: str, template: str, args: argparse.Namespace) -> None:
    from bench import small_jobs_quota

    runs: dict[int, list[small_jobs_quota.QuotaRun]] = {}
    for workers in args.workers:
        for _ in range(args.repeat):
            r = small_jobs_quota.run(admin, template, workers, args.worker_cpu)
            runs.setdefault(workers, []).append(r)
            print(f"run: {workers} worker(s) at {args.worker_cpu} cores each: {r.rate:.1f} evaluations/s", flush=True)
    small_jobs_quota.report(runs, args.jobs, args.nodes, args.worker_cpu)


if __name__ == "__main__":
    main()
