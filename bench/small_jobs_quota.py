"""`bench.small_jobs --worker-cpu Q`: horizontal scaling shown on a small machine. Each worker
process runs in its own cgroup with a CPU quota of Q cores, as if on a host of its own; the
applier and Postgres run uncapped. Per worker count it prints the rate, the speed-up against the
smallest count, each worker's measured CPU (in cores) and whether its quota bound it (the share
of CFS periods in which it was throttled), and the cores the applier and Postgres used, so the
report names what binds at the largest count: the workers' quotas, the applier (one thread of
Python near one core), or the machine (all cores busy)."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

import psutil

from bench.common import cloned_database
from bench.cpu import PostgresCpu, load_average, process_cpu
from bench.cpu_quota import CpuQuotas, Throttling
from bench.small_jobs import Role, _stop, set_paused, wait_connected
from bench.storm import query, start, wait_quiet

# Targets of issue 40 with Q = 0.25.
TARGETS = {2: 1.8, 4: 3.2}
QUOTA_BINDS = 0.5  # throttled in at least half of its periods: the quota is what limits it
APPLIER_BINDS = 0.85  # cores: the applier's serving thread is one thread of Python


@dataclass(frozen=True)
class WorkerUse:
    cores: float  # CPU seconds / wall seconds
    throttling: Throttling


@dataclass(frozen=True)
class QuotaRun:
    workers: int
    evaluations: int
    seconds: float
    worker_use: tuple[WorkerUse, ...]
    applier_cores: float
    postgres_cores: float
    machine_cores: float  # every process on the machine, ours and others'
    load: str

    @property
    def rate(self) -> float:
        return self.evaluations / self.seconds

    @property
    def quota_bound(self) -> bool:
        return all(use.throttling.share >= QUOTA_BINDS for use in self.worker_use)

    def binding(self, quota: float, cores: int) -> str:
        """What limits this run, judged from what each part used."""
        total = sum(use.cores for use in self.worker_use) + self.applier_cores + self.postgres_cores
        if self.machine_cores >= 0.9 * cores:
            others = max(0.0, self.machine_cores - total)
            return f"the machine ({self.machine_cores:.2f} of {cores} cores busy, {others:.2f} of them not this run's)"
        if self.applier_cores >= APPLIER_BINDS:
            return f"the applier ({self.applier_cores:.2f} cores: its one thread of Python)"
        if self.quota_bound:
            return f"the workers' quotas ({quota} cores each, throttled in most periods)"
        return "waiting (no part saturated: round trips, locks or the pipeline's hand-offs)"


def run(admin: str, template: str, workers: int, quota: float) -> QuotaRun:
    with cloned_database(admin, template) as url, CpuQuotas(quota) as quotas:
        applier = start("applier", url)
        pool: list[Role] = [start("worker", url) for _ in range(workers)]
        for process in pool:
            quotas.add(process.pid)
        wait_connected(url, workers)
        postgres = PostgresCpu(url)
        before = ([process_cpu([p.pid]) for p in pool], [quotas.throttling(p.pid) for p in pool])
        applier_before, postgres_before = process_cpu([applier.pid]), postgres.seconds()
        load = load_average()
        machine_before = _busy_seconds()
        began = time.monotonic()
        set_paused(url, False)
        wait_quiet(url)
        elapsed = time.monotonic() - began
        machine_cores = (_busy_seconds() - machine_before) / elapsed
        uses = tuple(
            WorkerUse((process_cpu([p.pid]) - cpu0) / elapsed, quotas.throttling(p.pid).since(t0))
            for p, cpu0, t0 in zip(pool, *before, strict=True)
        )
        applier_cores = (process_cpu([applier.pid]) - applier_before) / elapsed
        postgres_cores = (postgres.seconds() - postgres_before) / elapsed
        evals = int(str(query(url, "SELECT count(*) FROM evaluations WHERE status = 'complete'")[0]))
        load = f"{load} -> {load_average()}"
        _stop([applier, *pool])
    return QuotaRun(workers, evals, elapsed, uses, applier_cores, postgres_cores, machine_cores, load)


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent not idle, over all cores."""
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def median(runs: list[QuotaRun]) -> QuotaRun:
    return sorted(runs, key=lambda r: r.rate)[len(runs) // 2]


def report(results: dict[int, list[QuotaRun]], jobs: int, nodes: int, quota: float) -> None:
    cores = os.cpu_count() or 1
    smallest = min(results)
    base = statistics.median(r.rate for r in results[smallest])
    print(f"{jobs:,} service jobs x count 3 on {nodes:,} nodes; each worker process capped at {quota} cores")
    print(f"(its own cgroup, CFS quota {int(quota * 100_000)} us per 100,000 us); the applier and Postgres uncapped.")
    print(
        f"{'workers':>7} {'evals/s':>8} {'speed-up':>8}  {'each worker: cores used / throttled share':<44} "
        f"{'applier':>7} {'postgres':>8}  binds"
    )
    for workers, runs in results.items():
        r = median(runs)
        uses = ", ".join(f"{u.cores:.2f}/{u.throttling.share:.0%}" for u in r.worker_use)
        speed = statistics.median(x.rate for x in runs) / base
        print(
            f"{workers:>7} {r.rate:>8.1f} {speed:>7.2f}x  {uses:<44} {r.applier_cores:>7.2f} "
            f"{r.postgres_cores:>8.2f} {r.machine_cores:>7.2f}  {r.binding(quota, cores)}   (load {r.load}; runs: "
            + ", ".join(f"{x.rate:.1f}" for x in runs)
            + ")"
        )
    for workers, target in TARGETS.items():
        if workers in results and smallest == 1:
            speed = statistics.median(x.rate for x in results[workers]) / base
            verdict = "met" if speed >= target else "not met"
            print(f"1 -> {workers} workers: {speed:.2f}x (target with Q = 0.25: {target}x): {verdict}")
    largest = max(results)
    print(f"at {largest} workers, what binds: {median(results[largest]).binding(quota, cores)}")
