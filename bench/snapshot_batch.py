"""A worker's snapshot of a batch of jobs (SnapshotLoader.load_batch: the cluster once, then
one statement of each kind over arrays of the jobs) against the same jobs' snapshots read one
at a time (each by its key, the cluster each time), as the one-at-a-time path reads them; same
server, same jobs, same run, alternating rounds. Prints, per job, the reading process's CPU,
Postgres's CPU and the wall time, and the ratio of the two.

Usage: uv run python -m bench.snapshot_batch [--batch 8] [--rounds 1000] [--jobs 800] [--nodes 1000]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from app.db.engines import make_engine
from app.pipeline.snapshot import SnapshotLoader
from app.structs import Evaluation
from bench.common import add_nodes, bench_database, bench_server
from bench.cpu import PostgresCpu, load_average
from bench.small_jobs import register_jobs


@dataclass(frozen=True)
class Cost:
    python_ms: float  # per job
    postgres_ms: float
    wall_ms: float


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.snapshot_batch", description=__doc__.split("\n\n")[0])
    for name, default in (("--batch", 8), ("--rounds", 1000), ("--jobs", 800), ("--nodes", 1000)):
        parser.add_argument(name, type=_positive, default=default)
    args = parser.parse_args(argv)
    if args.batch > args.jobs:
        parser.error(f"argument --batch: {args.batch} is more than --jobs ({args.jobs})")
    return args


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def timed(postgres: PostgresCpu, rounds: int, jobs_per_round: int, read: Callable[[int], object]) -> Cost:
    pg, cpu, wall = postgres.seconds(), time.process_time(), time.monotonic()
    for i in range(rounds):
        read(i)
    done = rounds * jobs_per_round
    return Cost(
        (time.process_time() - cpu) / done * 1000,
        (postgres.seconds() - pg) / done * 1000,
        (time.monotonic() - wall) / done * 1000,
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with bench_server() as admin, bench_database(admin) as url:
        add_nodes(url, args.nodes, cpu=4000, memory_mb=16384)
        register_jobs(url, args.jobs)
        engine = make_engine(url, "worker", pool_size=1, max_overflow=0)
        loader = SnapshotLoader(engine)
        evaluations = [
            Evaluation(uuid.uuid4(), "default", f"svc-{i:05}", "service", 50, "job-register", 1)
            for i in range(args.jobs)
        ]
        batches = args.jobs // args.batch

        def batch(i: int) -> list[Evaluation]:
            start = (i % batches) * args.batch
            return evaluations[start : start + args.batch]

        def together(i: int) -> object:
            return loader.load_batch(batch(i))

        def alone(i: int) -> object:
            return [loader.load(ev) for ev in batch(i)]

        for i in range(20):  # psycopg prepares a statement on its fifth execution
            together(i), alone(i)
        postgres = PostgresCpu(url)
        load = load_average()
        costs: dict[str, list[Cost]] = {"batch": [], "one at a time": []}
        for _ in range(5):  # alternating, so a drift of the machine's speed falls on both
            costs["batch"].append(timed(postgres, args.rounds // 5, args.batch, together))
            costs["one at a time"].append(timed(postgres, args.rounds // 5, args.batch, alone))
        engine.dispose()
    report(costs, args, f"{load} -> {load_average()}")


def median(costs: list[Cost], field: str) -> float:
    values = sorted(float(getattr(c, field)) for c in costs)
    return values[len(values) // 2]


def report(costs: dict[str, list[Cost]], args: argparse.Namespace, load: str) -> None:
    print(f"snapshots of {args.batch} jobs at a time, {args.rounds} rounds each way ({args.nodes:,} nodes)")
    print(f"{'read':>14} {'python ms/job':>13} {'postgres ms/job':>15} {'wall ms/job':>11}")
    for name, runs in costs.items():
        fields = (median(runs, f) for f in ("python_ms", "postgres_ms", "wall_ms"))
        print(f"{name:>14} " + " ".join(f"{v:>{w}.3f}" for v, w in zip(fields, (13, 15, 11), strict=True)))
    ratios = ", ".join(
        f"{f.removesuffix('_ms')} {median(costs['batch'], f) / median(costs['one at a time'], f):.2f}"
        for f in ("python_ms", "postgres_ms", "wall_ms")
    )
    print(f"batch / one at a time (medians of 5 alternating sets): {ratios}; load average {load}")


if __name__ == "__main__":
    main()
