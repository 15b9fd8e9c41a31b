"""Where one worker's wall time per evaluation goes (issue 21): a real applier process and one
worker in this process, whose steps are timed by wrapping them (claim, lease keeper, snapshot,
scheduling pass, plan submit, the wait for the verdict, completion, idle waits). The wait for
the verdict is split with the database's own clock (same host): submit sent -> the applier's
transaction began (`plans.applied_at`) -> the worker saw the verdict.

Prints the mean and median milliseconds per evaluation of each step, and the evaluations/s.

Usage: uv run python -m bench.worker_phases [--jobs 300] [--nodes 1000]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

import workers.worker as worker_module
from app.db.engines import libpq_url
from app.pipeline import broker, plans
from app.settings.config import Settings
from app.settings.logging import configure
from bench.common import add_nodes, bench_database
from bench.small_jobs import register_jobs, set_paused, wait_connected
from bench.storm import start, wait_quiet

Phases = dict[str, list[float]]


class Recorder:
    """Durations (ms) by step, and the wall-clock moments of each plan's round trip."""

    def __init__(self) -> None:
        self.phases: Phases = defaultdict(list)
        self.submitted: dict[int, float] = {}
        self.seen: dict[int, float] = {}
        self.lock = threading.Lock()

    def add(self, phase: str, began: float) -> None:
        with self.lock:
            self.phases[phase].append((time.perf_counter() - began) * 1000)

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(phase, began)

        return timed


def instrument(rec: Recorder) -> None:
    """Wrap the steps the worker calls (module attributes: this process runs nothing else)."""
    claim, submit, result, told_verdicts = broker.claim, plans.submit, plans.result, plans.told_verdicts

    def timed_claim(*args: Any, **kwargs: Any) -> broker.Claim | None:
        began = time.perf_counter()
        held = claim(*args, **kwargs)
        rec.add("claim" if held is not None else "claim (none)", began)
        return held

    def timed_submit(*args: Any, **kwargs: Any) -> int:
        began, sent = time.perf_counter(), time.time()
        plan_id = submit(*args, **kwargs)
        rec.add("submit", began)
        rec.submitted[plan_id] = sent  # the applier may begin before this call returns
        return plan_id

    def timed_result(engine: Any, plan_id: int) -> plans.AppliedPlan | None:
        began = time.perf_counter()
        verdict = result(engine, plan_id)
        rec.add("verdict read", began)
        if verdict is not None:
            rec.seen[plan_id] = time.time()
        return verdict

    def timed_told(payloads: Any) -> dict[int, plans.AppliedPlan]:
        told = told_verdicts(payloads)
        for plan_id in told:  # the verdict seen in the notification, without a read
            rec.seen.setdefault(plan_id, time.time())
        return told

    broker.claim = timed_claim
    plans.told_verdicts = timed_told
    plans.submit = timed_submit
    plans.result = timed_result
    worker_module.Worker._pass = rec.wrap("scheduling pass", worker_module.Worker._pass)  # type: ignore[method-assign]  # timed in place
    broker.complete_success = rec.wrap("complete", broker.complete_success)
    worker_module.Worker.handle = rec.wrap("evaluation (handle)", worker_module.Worker.handle)  # type: ignore[method-assign]  # timed in place


@contextmanager
def worker_thread(url: str, rec: Recorder) -> Iterator[worker_module.Worker]:
    # One evaluation at a time (eval_batch 1): the steps timed here are that path's; a batch
    # shares its read and its submit among several evaluations (workers/batch.py).
    settings = Settings(database_url=url, poll_interval_s=0.1, eval_batch=1)
    worker = worker_module.Worker(settings, url, worker_module.ALL_SCHEDULERS)
    worker.loader.load = rec.wrap("snapshot", worker.loader.load)  # type: ignore[method-assign]  # timed in place
    worker.wakeup.wait = rec.wrap("wakeup wait", worker.wakeup.wait)  # type: ignore[method-assign]  # timed in place
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        stop.set()
        thread.join(30)


def round_trips(url: str, rec: Recorder) -> Phases:
    """submit -> applier's transaction began -> verdict seen, per plan, from the database's clock."""
    with psycopg.connect(libpq_url(url)) as conn:
        rows = conn.execute("SELECT id, extract(epoch FROM applied_at) FROM plans WHERE applied_at IS NOT NULL")
        applied = {int(i): float(t) for i, t in rows.fetchall()}
    split: Phases = defaultdict(list)
    for plan_id, submitted in rec.submitted.items():
        if plan_id in applied and plan_id in rec.seen:
            split["submit sent -> applier began"].append((applied[plan_id] - submitted) * 1000)
            split["applier began -> verdict seen"].append((rec.seen[plan_id] - applied[plan_id]) * 1000)
    return split


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_phases", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args(argv)
    configure("worker", "warning")  # a line per evaluation would drown the figures
    rec = Recorder()
    instrument(rec)
    with bench_database() as url:
        add_nodes(url, args.nodes, cpu=4000, memory_mb=16384)
        register_jobs(url, args.jobs)
        set_paused(url, True)
        applier = start("applier", url)
        try:
            with worker_thread(url, rec):
                wait_connected(url, 1)
                rec.phases.clear()
                began = time.monotonic()
                set_paused(url, False)
                wait_quiet(url)
                elapsed = time.monotonic() - began
            split = round_trips(url, rec)
        finally:
            applier.terminate()
            applier.wait(30)
    report(rec.phases | split, args.jobs, elapsed)


def report(phases: Phases, evaluations: int, elapsed: float) -> None:
    print(f"{evaluations} evaluations in {elapsed:.1f} s: {evaluations / elapsed:.1f}/s, one worker")
    print(f"{'step':<32} {'calls':>6} {'mean ms':>8} {'median':>8} {'ms/eval':>8}")
    for name, values in sorted(phases.items(), key=lambda kv: -sum(kv[1])):
        print(
            f"{name:<32} {len(values):>6} {statistics.fmean(values):>8.2f} {statistics.median(values):>8.2f} "
            f"{sum(values) / evaluations:>8.2f}"
        )


if __name__ == "__main__":
    main()
