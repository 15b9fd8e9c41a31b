"""Bin-packing density on a fixed cluster, so a change in how candidates are ordered or walked
cannot quietly spread work over more nodes: 200 equal nodes, 150 service jobs of three fixed
shapes placed one after another through the pure scheduler, each plan applied before the next.

The reference is pinned, measured on main at 35542d7 (before the nodes were sorted once per
snapshot, when every pass sorted them itself) with this very loop: 82 nodes used for 450
allocations (the same 450 allocations on the same nodes as this branch: the order of the
candidates, the seeds and the candidate limit are unchanged). Fewer nodes would be no regression. An independent floor
checks the figure is not nonsense: the CPU asked for, divided by one node's CPU, rounded up."""

from __future__ import annotations

import math
import uuid

import pytest

from app.scheduler import process
from app.scheduler.fit import add_usage
from app.structs import Allocation, NodeSet, NodeUsage, SchedulerConfiguration, Snapshot
from tests.support.scheduler_harness import evaluation, group, job, node, placed, task

pytestmark = pytest.mark.unit

NODE_CPU, NODE_MEM = 4000, 8192
# (cpu MHz, memory MB, count) of each job's one group, in turn.
SHAPES = [(500, 512, 3), (1000, 1024, 2), (250, 256, 4)]
JOBS = 150
MAIN_NODES_USED, MAIN_ALLOCATIONS = 82, 450


def pack(algorithm: str = "binpack") -> list[Allocation]:
    """Every allocation placed, jobs scheduled one after another on the cluster as it fills."""
    nodes = NodeSet(node(f"n{i:03}", cpu=NODE_CPU, mem=NODE_MEM) for i in range(200))
    usage: dict[uuid.UUID, NodeUsage] = {}
    everything: list[Allocation] = []
    for i in range(JOBS):
        cpu, mem, count = SHAPES[i % len(SHAPES)]
        j = job(f"job-{i:03}", [group(count=count, tasks=[task(cpu=cpu, mem=mem)])])
        config = SchedulerConfiguration(algorithm=algorithm)
        snap = Snapshot(index=100 + i, job=j, nodes=nodes, allocations=(), usage=dict(usage), config=config)
        allocs = placed(process(evaluation(j, key=f"e{i}"), snap, now_ns=1))
        for a in allocs:
            usage[a.node_id] = add_usage(usage.get(a.node_id, NodeUsage()), a.resources, a.host_ports)
        everything.extend(allocs)
    return everything


def test_binpack_density_is_no_worse_than_main() -> None:
    allocs = pack()
    used = len({a.node_id for a in allocs})
    cpu_floor = math.ceil(sum(a.resources.cpu for a in allocs) / NODE_CPU)
    assert len(allocs) == MAIN_ALLOCATIONS  # everything fits: 200 nodes hold far more
    assert cpu_floor <= used <= MAIN_NODES_USED, (used, cpu_floor)


def test_the_density_check_can_tell_spread_from_binpack() -> None:
    # The same loop under the spread algorithm uses every node (200 on main too): the bound above
    # is tight enough to catch a walk that stops packing.
    assert len({a.node_id for a in pack("spread")}) > MAIN_NODES_USED
