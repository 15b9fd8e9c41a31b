"""The applier pipeline's overlay, pure: what a batch still committing places is charged to the
next batch's read, what it frees is not lent before it commits, and what it stopped stays stopped."""

from __future__ import annotations

import uuid

import pytest

from app.pipeline.plan_apply.plan_check import BatchState, Touched, check
from app.pipeline.plan_apply.plan_overlay import effects, overlay
from app.structs import Allocation, AllocationStop, NodeUsage, Plan, Resources
from tests.support.scheduler_harness import node, pending_alloc

pytestmark = pytest.mark.unit
NODE = node("n1", cpu=1000, mem=4096, disk=10000)
OTHER = node("n2", cpu=1000, mem=4096, disk=10000)


def allocation(cpu: int, port: int = 0, on: uuid.UUID = NODE.id) -> Allocation:
    return pending_alloc(on, cpu, port=port)


def usage(cpu: int, *ports: int) -> NodeUsage:
    return NodeUsage(Resources(cpu=cpu, memory_mb=64 * (cpu // 100), disk_mb=10 * (cpu // 100)), frozenset(ports))


def read(node_usage: NodeUsage, touched: dict[uuid.UUID, Touched] | None = None) -> BatchState:
    return BatchState(
        nodes={NODE.id: NODE, OTHER.id: OTHER},
        usage={NODE.id: node_usage, OTHER.id: NodeUsage()},
        touched=touched or {},
    )


def test_the_next_read_is_charged_the_earlier_batchs_placements_on_top_of_what_it_reads() -> None:
    earlier = read(usage(300))
    verdict = check(Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(500, port=8080),)}), earlier)
    done = effects(earlier, [verdict])
    # Meanwhile an allocation of 200 finished: the next read sees 100 instead of 300.
    later = read(usage(100))
    overlay(later, done)
    assert later.usage[NODE.id].resources.cpu == 600
    assert later.usage[NODE.id].ports == frozenset({8080})
    assert check(Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(500),)}), later).rejected == [NODE.id]
    assert check(Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(400),)}), later).accepted
    assert check(Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(10, port=8080),)}), later).rejected


def test_room_the_earlier_batch_frees_is_not_lent_before_it_commits() -> None:
    """The stop may still be fenced or refused: until a read sees it, its room and its port stay
    taken, and the stopped allocation is no longer live (stopping it again frees nothing)."""
    running = uuid.uuid4()
    live = Touched(
        NODE.id, True, Resources(cpu=600, memory_mb=64, disk_mb=10), frozenset({9090}), ("default", "web", "web.g[0]")
    )
    earlier = read(usage(600, 9090), {running: live})
    stop = Plan(uuid.uuid4(), 50, 0, node_update={NODE.id: (AllocationStop(running, "stop", "job stopped"),)})
    done = effects(earlier, [check(stop, earlier)])
    assert earlier.usage[NODE.id].resources.cpu == 0  # the earlier batch itself counted on the room
    later = read(usage(600, 9090), {running: live})  # the stop is not committed yet
    overlay(later, done)
    assert later.usage[NODE.id] == usage(600, 9090)
    assert not later.touched[running].live
    port = Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(10, port=9090),)})
    assert check(port, later).rejected == [NODE.id]
    again = check(Plan(uuid.uuid4(), 50, 0, node_update={NODE.id: (AllocationStop(running, "stop", "again"),)}), later)
    assert again.stops and later.usage[NODE.id].resources.cpu == 600


def test_only_the_nodes_of_the_next_batch_are_charged_and_a_refused_plan_charges_nothing() -> None:
    earlier = read(NodeUsage())
    too_big = Plan(uuid.uuid4(), 50, 0, node_allocation={OTHER.id: (allocation(5000, on=OTHER.id),)})
    fits = Plan(uuid.uuid4(), 50, 0, node_allocation={NODE.id: (allocation(100),)})
    done = effects(earlier, [check(too_big, earlier), check(fits, earlier)])
    assert set(done.taken) == {NODE.id}
    later = BatchState(nodes={OTHER.id: OTHER}, usage={}, touched={})
    overlay(later, done)
    assert later.usage == {}
