"""One scheduling pass in isolation: a service job of count 3 on N ready nodes, through the pure
scheduler (no database), as a worker runs it for every evaluation. Printed beside the pass: the
node ordering corral used before (UUID objects sorted, the whole list shuffled), timed on the
same nodes in the same run, which was three quarters of a pass on 1,000 nodes.

Usage: uv run python -m bench.scheduler_pass [nodes] [passes]
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid

from app.scheduler import process
from app.scheduler.shuffle import Rng
from app.structs import Evaluation, Job, Node, Resources, Snapshot, Task, TaskGroup


def nodes(count: int) -> list[Node]:
    capacity = Resources(cpu=4000, memory_mb=8192, disk_mb=100_000)
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
        type="service",
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


def main(count: int, passes: int) -> None:
    cluster = nodes(count)
    snapshots = [Snapshot(index=100 + i, job=job(i), nodes=tuple(cluster), allocations=()) for i in range(passes)]
    pass_times, ordering_times = [], []
    for snapshot in snapshots:
        assert snapshot.job is not None
        began = time.perf_counter()
        result = process(evaluation(snapshot.job), snapshot, now_ns=1)
        pass_times.append(time.perf_counter() - began)
        assert sum(len(a) for a in result.plan.node_allocation.values()) == 3
        began = time.perf_counter()
        old_ordering(cluster, snapshot.index)
        ordering_times.append(time.perf_counter() - began)
    pass_ms, old_ms = median_ms(pass_times), median_ms(ordering_times)
    print(f"nodes={count} passes={passes}")
    print(f"scheduling pass (count-3 service job): median {pass_ms:.2f} ms")
    print(f"old node ordering alone (sort UUIDs + full shuffle): median {old_ms:.2f} ms")
    print(f"ratio pass / old ordering alone: {pass_ms / old_ms:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 300)
