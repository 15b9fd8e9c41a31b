"""One scheduling pass in isolation: a service job of count 3 on N ready nodes, through the pure
scheduler (no database), as a worker runs it for every evaluation: the snapshots share one
NodeSet (the nodes sorted and indexed once, as the worker's snapshot loader keeps them while the
nodes table does not change). Printed beside it, on the same nodes in the same run: the same pass
with the nodes handed over unsorted, so sorted and indexed for that pass (what every evaluation
paid before the NodeSet), and the node ordering corral used before that (UUID objects sorted, the
whole list shuffled) timed alone.

Usage: uv run python -m bench.scheduler_pass [nodes] [passes]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid

from app.scheduler import process
from app.scheduler.shuffle import Rng
from app.structs import Evaluation, Job, Node, NodeSet, Resources, Snapshot, Task, TaskGroup


def nodes(count: int, *, memory_mb: int = 8192) -> list[Node]:
    """`count` ready nodes of 4,000 MHz and `memory_mb`, one class, the mock driver."""
    capacity = Resources(cpu=4000, memory_mb=memory_mb, disk_mb=100_000)
    return [
        Node(
            id=uuid.uuid4(),
            name=f"n{i}",
            datacenter="dc1",
            node_class="",
            node_pool="default",
            computed_class="v1:1",
            status="ready",
            eligibility="eligible",
            draining=False,
            capacity=capacity,
            reserved=Resources(),
            healthy_drivers=frozenset({"mock"}),
        )
        for i in range(count)
    ]


def job(index: int) -> Job:
    task = Task("t", "mock", Resources(cpu=100, memory_mb=128))
    return Job(
        namespace="default",
        id=f"job-{index}",
        name=f"job-{index}",
        type="service",
        priority=50,
        datacenters=("*",),
        node_pool="default",
        task_groups=(TaskGroup("g", 3, (task,), 0),),
        version=0,
    )


def evaluation(j: Job) -> Evaluation:
    return Evaluation(
        id=uuid.uuid4(),
        namespace="default",
        job_id=j.id,
        type=j.type,
        priority=50,
        triggered_by="job-register",
        job_modify_index=1,
    )


def old_ordering(cluster: list[Node], seed: int) -> list[Node]:
    """Before: sort by UUID object, then Fisher-Yates over the whole list."""
    out = sorted(cluster, key=lambda n: n.id)
    rng = Rng(seed, 1)
    for i in range(len(out) - 1, 0, -1):
        j = rng.below(i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def median_ms(timings: list[float]) -> float:
    return statistics.median(timings) * 1000


def timed_pass(snapshot: Snapshot) -> float:
    assert snapshot.job is not None
    ev = evaluation(snapshot.job)
    began = time.perf_counter()
    result = process(ev, snapshot, now_ns=1)
    elapsed = time.perf_counter() - began
    assert sum(len(a) for a in result.plan.node_allocation.values()) == 3
    return elapsed


def unsorted_pass(index: int, cluster: list[Node]) -> float:
    """The pass plus building its snapshot from a plain tuple: the nodes sorted and indexed for it."""
    began = time.perf_counter()
    snapshot = Snapshot(index=index, job=job(index), nodes=tuple(cluster), allocations=())
    return time.perf_counter() - began + timed_pass(snapshot)


def main(count: int, passes: int) -> None:
    cluster = nodes(count)
    shared = NodeSet(cluster)
    pass_times, unsorted_times, ordering_times = [], [], []
    for i in range(passes):
        pass_times.append(timed_pass(Snapshot(index=100 + i, job=job(i), nodes=shared, allocations=())))
        unsorted_times.append(unsorted_pass(100 + i, cluster))
        began = time.perf_counter()
        old_ordering(cluster, 100 + i)
        ordering_times.append(time.perf_counter() - began)
    pass_ms, unsorted_ms, old_ms = median_ms(pass_times), median_ms(unsorted_times), median_ms(ordering_times)
    print(f"nodes={count} passes={passes} load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"scheduling pass (count-3 service job), nodes sorted once per snapshot: median {pass_ms:.2f} ms")
    print(f"the same pass, nodes sorted and indexed per pass (before):            median {unsorted_ms:.2f} ms")
    print(f"old node ordering alone (sort UUIDs + full shuffle):                   median {old_ms:.2f} ms")
    print(f"ratio pass / pass sorting per pass: {pass_ms / unsorted_ms:.2f}")
    print(f"ratio pass / old ordering alone: {pass_ms / old_ms:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 300)
