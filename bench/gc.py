"""Forced GC throughput and its interference with the broker.

Fills a fresh database with terminal evaluations (default 1,000,000), each with an applied
plan, its plan result and a finished allocation, spread over jobs of which a quarter are
stopped. Then measures the broker's claim latency on its own (a claim + complete loop in a
separate process over other, pending evaluations) for 10 s before and 10 s after the GC, and
again while a forced GC runs.

Prints rows deleted per second (target >= 50,000/s), the longest GC transaction, and the
claim p99 during GC against the same loop without GC (target ratio <= 2.0).

The claim loop offers a steady 200 claims/s (a busy cluster; third argument), each claim
followed by its completion. Claims commit asynchronously (a lease, see broker._claim_statement);
completions wait for their WAL flush, and their p99 ratio is printed too, without a target.

GC paces itself as the product does (CORRAL_GC_SLOW_BATCH_PAUSE: after a batch that took over
twice the recent batches' time per row, pause for that many times its duration; 0, the default,
never pauses). BENCH_PG_SETTINGS='{}' runs the embedded server with initdb's defaults.

Usage: uv run python -m bench.gc [evaluations] [batch size] [claims per second]
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import TypeVar

import psutil
import psycopg
import psycopg.rows

from app.db.engines import libpq_url, make_engine, make_sessionmaker
from app.gc.collector import Collector, Report
from app.gc.pacer import Pacer
from app.gc.thresholds import Thresholds
from app.pipeline import broker
from app.pipeline.broker import Outcome
from app.settings.config import Settings
from bench.common import bench_database
from bench.gc_fill import fill_terminal

EVALS_PER_JOB = 100
BASELINE_S = 10.0
PENDING = 60_000


T = TypeVar("T")


def load_pending(url: str, n: int) -> None:
    """n live jobs with one pending evaluation each: work for the claim loop, untouched by GC."""
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute(
            "INSERT INTO jobs (namespace, id, name, type, priority, status, status_updated_at, stop, version, "
            "job_modify_index, submit_time, datacenters, node_pool, periodic, parameterized, dispatched, all_at_once, "
            "stable, spec, create_index, modify_index) SELECT 'default', 'claim-' || i, 'claim-' || i, 'service', 50, "
            "'pending', now(), false, 0, 1, now(), '{dc1}', 'default', false, false, false, false, false, '{}', 1, 1 "
            "FROM generate_series(1, %s) i",
            (n,),
        )
        conn.execute(
            "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status, "
            "create_index, modify_index) SELECT gen_random_uuid(), 'default', 'claim-' || i, 50, 'service', "
            "'job-register', 1, 'pending', 1000000 + i, 1000000 + i FROM generate_series(1, %s) i",
            (n,),
        )
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        # Start both measurements from the same quiet state: no checkpoint or autovacuum of the
        # fill's millions of rows may land in the baseline window.
        conn.execute("CHECKPOINT")


def claim_loop(url: str, rate: float, stop: Event, out: Queue[tuple[Latencies, float]]) -> None:
    """Claim and complete evaluations at a steady offered rate until told to stop; report
    each claim's latency. A fixed rate (an open loop) measures what a claim costs while GC
    runs; a saturating loop would measure how the two share two cores instead."""
    engine = make_engine(url, "worker", pool_size=2, pre_ping=False)
    latencies: list[float] = []
    completions: list[float] = []
    began = time.monotonic()
    next_at = time.monotonic()
    while not stop.is_set():
        next_at += 1.0 / rate
        time.sleep(max(0.0, next_at - time.monotonic()))
        started = time.perf_counter()
        held = broker.claim(engine, ["service"], "bench", 60, rescue=False)
        latencies.append(time.perf_counter() - started)
        if held is None:
            break
        started = time.perf_counter()
        broker.complete_success(engine, held, Outcome(snapshot_index=0))
        completions.append(time.perf_counter() - started)
    out.put((Latencies(latencies, completions), time.monotonic() - began))
    engine.dispose()


@dataclass
class Latencies:
    """Seconds per claim, and per completion: the claim commits asynchronously, the completion
    (the ack) waits for its WAL flush like every state change."""

    claims: list[float]
    completions: list[float]

    def cycles(self) -> list[float]:
        """Claim plus completion: what one evaluation's broker round costs a worker."""
        return [claim + done for claim, done in zip(self.claims, self.completions, strict=False)]

    def __add__(self, other: Latencies) -> Latencies:
        return Latencies(self.claims + other.claims, self.completions + other.completions)


def measure_claims(url: str, rate: float, during: Callable[[], T] | None) -> tuple[Latencies, float, T | None]:
    """Run the claim loop for BASELINE_S, or for as long as `during()` takes (and what it returned)."""
    stop = multiprocessing.Event()
    out: Queue[tuple[Latencies, float]] = multiprocessing.Queue()
    loop = multiprocessing.Process(target=claim_loop, args=(url, rate, stop, out))
    loop.start()
    time.sleep(0.5)  # let it connect and warm up
    result: T | None = None
    if during is None:
        time.sleep(BASELINE_S)
    else:
        result = during()
    stop.set()
    latencies, elapsed = out.get()
    loop.join()
    return latencies, elapsed, result


SERVER_ACTIVITY = """
SELECT (SELECT num_timed + num_requested FROM pg_stat_checkpointer) AS checkpoints,
       (SELECT num_requested FROM pg_stat_checkpointer) AS requested,
       (SELECT buffers_written FROM pg_stat_checkpointer) AS checkpoint_buffers,
       (SELECT wal_bytes FROM pg_stat_wal) AS wal_bytes,
       (SELECT wal_fpi FROM pg_stat_wal) AS wal_fpi,
       (SELECT sum(autovacuum_count) FROM pg_stat_user_tables) AS autovacuums,
       (SELECT sum(autoanalyze_count) FROM pg_stat_user_tables) AS autoanalyzes,
       (SELECT sum(reads) FROM pg_stat_io) AS reads,
       (SELECT sum(writes) FROM pg_stat_io) AS writes,
       (SELECT sum(fsyncs) FROM pg_stat_io) AS fsyncs,
       (SELECT setting FROM pg_settings WHERE name = 'shared_buffers') AS shared_buffers
"""


def server_activity(url: str) -> dict[str, int]:
    """Cumulative server counters (checkpoints, WAL, autovacuum, block I/O), to tell what else
    the GC window held. The statistics are flushed at most once a second, so the figures of a
    window are approximate at its edges."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
        row = cursor.execute(SERVER_ACTIVITY).fetchone()
    assert row is not None
    return {k: int(v or 0) for k, v in row.items()}


def server_cpu_s(url: str) -> float | None:
    """CPU seconds the server's processes have used so far: the live ones (postmaster, backends,
    autovacuum, checkpointer, WAL writer) and those that exited (their time is the postmaster's
    children time once reaped). Differences bracket a window, however busy the machine is
    otherwise. None when the server is not a local process (CORRAL_DATABASE_URL elsewhere)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'").fetchone()
    try:
        postmaster = psutil.Process(int(row[0])).parent() if row else None
        if postmaster is None:
            return None
        own = postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for child in postmaster.children():
            try:
                times = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return float(total)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def describe_activity(before: dict[str, int], after: dict[str, int]) -> str:
    d = {k: after[k] - before[k] for k in before}
    return (
        f"checkpoints {d['checkpoints']} ({d['requested']} requested by WAL volume), "
        f"{d['checkpoint_buffers']:,} buffers checkpointed; WAL {d['wal_bytes'] / 2**20:,.0f} MiB "
        f"({d['wal_fpi']:,} full-page images); autovacuums {d['autovacuums']}, autoanalyzes {d['autoanalyzes']}; "
        f"block reads {d['reads']:,}, writes {d['writes']:,}, fsyncs {d['fsyncs']:,} "
        f"(shared_buffers {after['shared_buffers'] * 8 // 1024} MiB)"
    )


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 100 else max(values)


def main(evaluations: int, batch_size: int, rate: float) -> None:
    jobs = max(1, evaluations // EVALS_PER_JOB)
    with bench_database() as url:
        began = time.monotonic()
        rows = fill_terminal(url, jobs=jobs, evals_per_job=EVALS_PER_JOB)
        load_pending(url, PENDING)
        print(
            f"filled {rows:,} terminal rows ({jobs * EVALS_PER_JOB:,} evaluations) in {time.monotonic() - began:.0f} s"
        )

        base, base_s, _ = measure_claims(url, rate, None)
        engine = make_engine(url, "worker", pool_size=2)
        pacer = Pacer(Settings().gc_slow_batch_pause)
        collector = Collector(make_sessionmaker(engine), Thresholds.forced(), batch_size, pacer=pacer)

        def forced_gc() -> tuple[Report, float]:
            started = time.monotonic()
            report = collector.run("force-gc")
            return report, time.monotonic() - started

        activity, cpu_before, own_before = server_activity(url), server_cpu_s(url), time.process_time()
        during, during_s, result = measure_claims(url, rate, forced_gc)
        own_cpu = time.process_time() - own_before
        cpu_after = server_cpu_s(url)
        activity_during = describe_activity(activity, server_activity(url))
        server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        assert result is not None
        report, gc_s = result
        engine.dispose()
        after, after_s, _ = measure_claims(url, rate, None)

    deleted = sum(report.removed.values())
    print(f"forced GC: {deleted:,} rows in {gc_s:.1f} s = {deleted / gc_s:,.0f} rows/s (target >= 50,000)")
    print("  removed: " + ", ".join(f"{k}={v:,}" for k, v in sorted(report.removed.items())))
    print(
        f"  {report.batches:,} transactions of at most {batch_size:,} parent rows; "
        f"largest {report.largest_batch:,} rows; longest {report.longest_batch_ms} ms"
    )
    print(
        f"  paced (CORRAL_GC_SLOW_BATCH_PAUSE={pacer.ratio:g}): {report.pauses:,} pauses after slow batches, "
        f"{report.paused_s:.1f} s in all"
    )
    print(f"  server during GC: {activity_during}")
    # CPU per row: what the GC costs whatever else the machine runs (it includes the claim
    # loop's backend, about the same in every run at the same rate and duration).
    cpu = "not measured (server not local)" if server_cpu is None else f"{server_cpu:.1f} s"
    print(f"  CPU during GC: server {cpu}, GC process (Python) {own_cpu:.1f} s")
    # Without GC = the windows before and after it, pooled: one 10 s window alone swings its p99
    # by half on a shared 2-core machine.
    print(f"  p99 without GC before it {p99(base.claims) * 1000:.2f} ms, after it {p99(after.claims) * 1000:.2f} ms")
    base, base_s = base + after, base_s + after_s
    base_p99, during_p99 = p99(base.claims) * 1000, p99(during.claims) * 1000
    # The completion is the same loop's synchronous commit: no target, shown so that what GC
    # still costs a commit that waits for the disk stays in sight.
    done_base, done_during = p99(base.completions) * 1000, p99(during.completions) * 1000
    cycle_base, cycle_during = p99(base.cycles()) * 1000, p99(during.cycles()) * 1000
    print(
        f"  completion (synchronous) p99 without GC {done_base:.2f} ms, during it {done_during:.2f} ms: "
        f"ratio {done_during / done_base:.2f}; claim + completion p99 {cycle_base:.2f} ms against "
        f"{cycle_during:.2f} ms: ratio {cycle_during / cycle_base:.2f} (no target)"
    )
    print(
        f"claim latency without GC: p50 {statistics.median(base.claims) * 1000:.2f} ms, p99 {base_p99:.2f} ms "
        f"({len(base.claims) / base_s:,.0f} claims/s)"
    )
    print(
        f"claim latency during GC:  p50 {statistics.median(during.claims) * 1000:.2f} ms, p99 {during_p99:.2f} ms "
        f"({len(during.claims) / during_s:,.0f} claims/s)"
    )
    print(f"p99 ratio during/without: {during_p99 / base_p99:.2f} (target <= 2.0)")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 1000,
        float(sys.argv[3]) if len(sys.argv) > 3 else 200.0,
    )
