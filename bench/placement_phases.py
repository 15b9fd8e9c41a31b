"""The in-process phases behind bench.placement, timed one by one (CPU time of this process, so
other load on the machine moves the figures less) without a database: the pure
scheduling pass for one batch job of `count` on `nodes` empty nodes, encoding its plan to the
stored JSON (the codec, then json.dumps as psycopg's Jsonb does), reading it back (json.loads as
psycopg does, then the codec), and the applier's check of the decoded plan. The database's own
work (the submit's INSERT, the COPY and its triggers) is not here: bench.placement has it.

Each round runs once with placement metrics on (as a worker records them:
workers.worker.placement_metrics_options) and once with them off, alternating, and the phases
are printed side by side with the ratio of their sums (issue 40: metrics at 95 % or more of the
rate without them). BENCH_PLACEMENT_METRICS="on" or "off" runs one setting alone.

Usage: uv run python -m bench.placement_phases [count] [nodes] [rounds]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from app.pipeline.codecs.plan_codec import decode_plan, encode_plan
from app.pipeline.plan_apply.plan_check import BatchState, check
from app.scheduler import process
from app.structs import Job, Node, NodeSet, Plan, Resources, Snapshot, Task, TaskGroup
from app.wire.plan import PlanRowJson
from bench.scheduler_pass import evaluation, nodes
from workers.worker import placement_metrics_options

T = TypeVar("T")


def cluster(count: int) -> list[Node]:
    """bench.placement's nodes: 4,000 MHz and 16 GiB each, one class, the mock driver."""
    return nodes(count, memory_mb=16384)


def batch_job(count: int) -> Job:
    task = Task("t", "mock", Resources(cpu=100, memory_mb=64))
    return Job(
        namespace="default",
        id="c1m",
        name="c1m",
        type="batch",
        priority=50,
        datacenters=("dc1",),
        node_pool="default",
        task_groups=(TaskGroup("g", count, (task,), 0),),
        version=0,
    )


def timed(label: str, timings: dict[str, list[float]], work: Callable[[], T]) -> T:
    began = time.process_time()
    out = work()
    timings.setdefault(label, []).append(time.process_time() - began)
    return out


def one_round(count: int, nodes: NodeSet, timings: dict[str, list[float]], metrics: bool = True) -> None:
    job = batch_job(count)
    snapshot = Snapshot(index=10, job=job, nodes=nodes, allocations=())
    options = placement_metrics_options(metrics)
    result = timed("scheduling pass", timings, lambda: process(evaluation(job), snapshot, now_ns=1, metrics=options))
    plan = result.plan
    placed = sum(len(a) for a in plan.node_allocation.values())
    assert placed == count, f"placed {placed} of {count}"
    row = timed("encode (codec)", timings, lambda: encode_plan(plan, job.namespace, job.id))
    text = timed("encode (json.dumps)", timings, lambda: json.dumps(row["node_allocation"]))
    loaded = timed("decode (json.loads)", timings, lambda: json.loads(text))
    stored: PlanRowJson = {**row, "node_allocation": loaded}
    decoded: Plan = timed("decode (codec)", timings, lambda: decode_plan(stored))
    state = BatchState(nodes=dict(nodes.by_id), usage={}, touched={})
    verdict = timed("applier check", timings, lambda: check(decoded, state))
    assert not verdict.rejected


def main(count: int, node_count: int, rounds: int, settings: tuple[bool, ...] = (True, False)) -> None:
    nodes = NodeSet(cluster(node_count))
    timings: dict[bool, dict[str, list[float]]] = {on: {} for on in settings}
    for on in settings:  # a small round first, not counted: the caches a worker keeps warm filled
        one_round(min(count, 1000), nodes, {}, on)
    for _ in range(rounds):
        for on in settings:
            one_round(count, nodes, timings[on], on)
    print(
        f"one batch job of {count:,} on {node_count:,} nodes, median of {rounds} rounds, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"{'CPU per phase':<22} " + "  ".join(f"{'metrics ' + _word(on):>28}" for on in settings))
    totals = dict.fromkeys(settings, 0.0)
    for label in timings[settings[0]]:
        cells = []
        for on in settings:
            median = statistics.median(timings[on][label])
            totals[on] += median
            cells.append(f"{median * 1000:>9.1f} ms {median / count * 1e6:>7.1f} us/pl")
        print(f"{label:<22} " + "  ".join(cells))
    print(
        f"{'sum':<22} " + "  ".join(f"{totals[on] * 1000:>9.1f} ms {count / totals[on]:>8,.0f} pl/s" for on in settings)
    )
    if len(settings) == 2:
        ratio = totals[False] / totals[True]
        extra = (totals[True] - totals[False]) / count * 1e6
        print(f"metrics on / off, placements per CPU second of these phases: {ratio:.3f} ({extra:+.1f} us a placement)")


def _word(on: bool) -> str:
    return "on" if on else "off"


def metrics_settings(text: str) -> tuple[bool, ...]:
    return tuple({"on": True, "off": False}[word.strip()] for word in text.split(","))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    count, node_count, rounds = args + [50_000, 5_000, 3][len(args) :]
    main(count, node_count, rounds, metrics_settings(os.environ.get("BENCH_PLACEMENT_METRICS", "on,off")))
