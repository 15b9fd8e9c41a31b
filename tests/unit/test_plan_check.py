"""The applier's check of a batch, pure: each plan against what the plans before it took."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from app.pipeline.plan_apply.plan_check import BatchState, Touched, check
from app.structs import Allocation, AllocationStop, NodeUsage, Plan, Port, Resources
from tests.support.scheduler_harness import node, pending_alloc

pytestmark = pytest.mark.unit
NODE = node("n1", cpu=1000, mem=4096, disk=10000)
NODE_ID = NODE.id
WEB_0 = ("default", "web", "web.g[0]")  # pending_alloc's namespace, job and name


def allocation(cpu: int, alloc_id: uuid.UUID | None = None) -> Allocation:
    return pending_alloc(NODE_ID, cpu, id=alloc_id or uuid.uuid4())


def placing(*allocs: Allocation) -> Plan:
    return Plan(uuid.uuid4(), 50, 0, node_allocation={NODE_ID: allocs})


def state(usage: NodeUsage | None = None, touched: dict[uuid.UUID, Touched] | None = None) -> BatchState:
    return BatchState(nodes={NODE_ID: NODE}, usage={NODE_ID: usage or NodeUsage()}, touched=touched or {})


def test_a_later_plan_sees_what_an_earlier_one_took() -> None:
    batch = state()
    first = check(placing(allocation(600)), batch)
    second = check(placing(allocation(600)), batch)
    assert list(first.accepted) == [NODE_ID] and not first.rejected
    assert second.rejected == [NODE_ID] and not second.accepted
    assert batch.usage[NODE_ID].resources.cpu == 600


def test_a_rejected_plan_takes_nothing() -> None:
    batch = state()
    assert check(placing(allocation(1200)), batch).rejected == [NODE_ID]
    assert check(placing(allocation(1000)), batch).accepted


def test_a_stop_frees_room_and_its_victim_cannot_be_preempted_again() -> None:
    running = uuid.uuid4()
    batch = state(
        NodeUsage(Resources(cpu=800, memory_mb=64, disk_mb=10)),
        {running: Touched(NODE_ID, True, Resources(cpu=800, memory_mb=64, disk_mb=10), frozenset(), WEB_0)},
    )
    stop = Plan(uuid.uuid4(), 50, 0, node_update={NODE_ID: (AllocationStop(running, "stop", "job stopped"),)})
    assert check(stop, batch).stops == {NODE_ID: [AllocationStop(running, "stop", "job stopped")]}
    assert batch.usage[NODE_ID].resources.cpu == 0 and not batch.touched[running].live
    preempting = Plan(
        uuid.uuid4(),
        50,
        0,
        node_allocation={NODE_ID: (allocation(900),)},
        node_preemptions={NODE_ID: (AllocationStop(running, "evict", "preempted"),)},
    )
    assert check(preempting, batch).rejected == [NODE_ID]  # its victim is gone: re-plan from fresh state
    assert check(placing(allocation(900)), batch).accepted


def test_an_allocation_placed_earlier_in_the_batch_can_be_updated_in_place() -> None:
    batch = state()
    placed = allocation(300)
    check(placing(placed), batch)
    bigger = allocation(500, alloc_id=placed.id)
    assert check(placing(bigger), batch).accepted
    assert batch.usage[NODE_ID].resources.cpu == 500


@pytest.mark.parametrize(
    ("existing", "why"),
    [
        (
            Touched(
                NODE_ID, True, Resources(cpu=300, memory_mb=64, disk_mb=10), frozenset(), ("default", "web", "web.g[1]")
            ),
            "another name",
        ),
        (
            Touched(
                NODE_ID, True, Resources(cpu=300, memory_mb=64, disk_mb=10), frozenset(), ("default", "db", "web.g[0]")
            ),
            "another job",
        ),
        (Touched(uuid.uuid4(), True, Resources(cpu=300, memory_mb=64, disk_mb=10), frozenset(), WEB_0), "another node"),
        (Touched(NODE_ID, False, Resources(cpu=300, memory_mb=64, disk_mb=10), frozenset(), WEB_0), "stopped"),
    ],
)
def test_new_work_with_an_existing_allocations_id_is_refused_unless_it_updates_it_in_place(
    existing: Touched, why: str
) -> None:
    """The write updates by ID, so a placement that reuses an existing allocation's ID (two
    passes of one evaluation that drew the same IDs) would overwrite that allocation and place
    nothing: the node is refused and the scheduler re-plans."""
    taken = uuid.uuid4()
    batch = state(NodeUsage(Resources(cpu=300, memory_mb=64, disk_mb=10)), {taken: existing})
    assert check(placing(allocation(300, alloc_id=taken)), batch).rejected == [NODE_ID], why
    same = existing._replace(node_id=NODE_ID, live=True, owner=WEB_0)
    assert check(placing(allocation(300, alloc_id=taken)), state(touched={taken: same})).accepted


def with_port(alloc: Allocation, port: int) -> Allocation:
    return replace(alloc, ports=(Port("http", port),))


def test_a_node_takes_several_new_allocations_only_if_all_of_them_fit_together() -> None:
    batch = state(NodeUsage(Resources(cpu=100, memory_mb=64, disk_mb=10)))
    assert check(placing(allocation(300), allocation(300), allocation(301)), batch).rejected == [NODE_ID]
    assert batch.usage[NODE_ID].resources.cpu == 100  # nothing charged for the rejected node
    verdict = check(placing(allocation(300), allocation(300), allocation(300)), batch)
    assert [len(v) for v in verdict.accepted.values()] == [3]
    assert batch.usage[NODE_ID].resources == Resources(cpu=1000, memory_mb=256, disk_mb=40, memory_max_mb=192)


def test_new_allocations_on_one_node_may_not_share_a_host_port_or_take_a_used_one() -> None:
    batch = state(NodeUsage(ports=frozenset({8080})))
    assert check(placing(with_port(allocation(10), 9000), with_port(allocation(10), 9000)), batch).rejected
    assert check(placing(with_port(allocation(10), 8080)), batch).rejected
    assert check(placing(with_port(allocation(10), 9000), with_port(allocation(10), 9001)), batch).accepted
    assert batch.usage[NODE_ID].ports == frozenset({8080, 9000, 9001})
