"""The broker against its peers, on one Postgres server in one run, each with the same number of
processes: corral's claim + complete loop and the bare SQL loop (both from bench/broker.py),
PgQueuer with small batches, and Procrastinate, each taking no-op jobs off a full queue until
it is empty. Prints each rate and the issue's target ratios: corral / bare >= 0.5,
corral / Procrastinate >= 2, corral / PgQueuer (small batches) >= 1.

The peers are optional (`uv sync --extra bench-peers`); one that cannot be imported or run is
reported as skipped, with the reason, and gets no figure.

Usage: uv run --extra bench-peers python -m bench.broker_peers [--jobs 20000] [--processes 2]
       [--pgqueuer-batch 1] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time
from collections.abc import Callable, Coroutine
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event, Semaphore
from typing import Any

from app.db.engines import libpq_url
from bench import queue_peers
from bench.broker import run_bare, run_corral
from bench.common import bench_database, bench_server
from bench.cpu import load_average

Drain = Callable[[str, int], Coroutine[Any, Any, tuple[int, float]]]
Outcome = tuple[int, float] | str  # (jobs run, finished monotonic time), or the peer's failure


def _drain_in_processes(processes: int, drain: Drain, dsn: str, batch: int) -> float:
    """Jobs per second from `go` to the last job any process ran. Each process sets
    itself up (imports, connection) before `go`, so start-up is not counted."""
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Semaphore(0), ctx.Event()
    results: Queue[Outcome] = ctx.Queue()
    workers = [ctx.Process(target=_child, args=(drain, dsn, batch, ready, go, results)) for _ in range(processes)]
    for w in workers:
        w.start()
    for _ in workers:
        if not ready.acquire(timeout=120):
            raise RuntimeError("a peer process did not start")
    began = time.monotonic()
    go.set()
    outcomes = [results.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(30)
    errors = [o for o in outcomes if isinstance(o, str)]
    if errors:
        raise RuntimeError(errors[0])
    done = [o for o in outcomes if not isinstance(o, str)]
    if sum(count for count, _ in done) == 0:
        raise RuntimeError("no job ran")
    return sum(count for count, _ in done) / (max(end for count, end in done if count) - began)


def _child(drain: Drain, dsn: str, batch: int, ready: Semaphore, go: Event, out: Queue[Outcome]) -> None:
    try:
        ready.release()
        go.wait()
        out.put(asyncio.run(drain(dsn, batch)))
    except Exception as exc:  # reported by the parent as the peer's failure
        out.put(f"{type(exc).__name__}: {exc}")


def run_peer(
    name: str,
    admin: str,
    jobs: int,
    processes: int,
    fill: Callable[[str, int], Coroutine[Any, Any, None]],
    drain: Drain,
    batch: int,
) -> float | str:
    """The peer's rate, or why it was skipped."""
    try:
        with bench_database(admin) as url:
            dsn = libpq_url(url)
            asyncio.run(fill(dsn, jobs))
            return _drain_in_processes(processes, drain, dsn, batch)
    except ImportError as exc:
        return f"skipped: not installed ({exc.name}); uv sync --extra bench-peers"
    except Exception as exc:
        return f"skipped: {name} failed: {type(exc).__name__}: {exc}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_peers")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs queued for each peer")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--pgqueuer-batch", type=int, default=1, help="PgQueuer's batch_size ('small')")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the corral and bare runs")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    load = load_average()
    rates: dict[str, float | str] = {}
    with bench_server() as admin:
        with bench_database(admin) as url:
            rates["bare SQL (pgbench)"] = run_bare(url, 100_000, args.processes, args.seconds)
            rates["corral"] = run_corral(url, 100_000, args.processes, args.seconds)
        rates[f"PgQueuer (batch {args.pgqueuer_batch})"] = run_peer(
            "PgQueuer",
            admin,
            args.jobs,
            args.processes,
            queue_peers.pgqueuer_fill,
            queue_peers.pgqueuer_drain,
            args.pgqueuer_batch,
        )
        rates["Procrastinate"] = run_peer(
            "Procrastinate",
            admin,
            args.jobs,
            args.processes,
            queue_peers.procrastinate_fill,
            queue_peers.procrastinate_drain,
            1,
        )
    report(rates, args.processes, f"{load} -> {load_average()}")


def report(rates: dict[str, float | str], processes: int, load: str) -> None:
    print(f"no-op claim + complete, {processes} processes each, one Postgres; load average {load}")
    for name, rate in rates.items():
        print(f"  {name:<22} " + (f"{rate:9.0f} jobs/s" if isinstance(rate, float) else rate))
    corral = rates["corral"]
    assert isinstance(corral, float)
    for peer, target in [("bare SQL (pgbench)", 0.5), ("Procrastinate", 2.0)] + [
        (name, 1.0) for name in rates if name.startswith("PgQueuer")
    ]:
        rate = rates[peer]
        figure = f"{corral / rate:.2f}" if isinstance(rate, float) else "n/a (skipped)"
        print(f"  corral / {peer:<20} {figure:>6}   (target >= {target})")


if __name__ == "__main__":
    main()
