"""The pure victim selection: the seed's worked example, the priority boundary, ports, the
max_parallel penalty, and hypothesis properties (enough freed, only eligible priorities,
nothing evicted that is not needed)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.scheduler.fit import remove_usage
from app.scheduler.preemption import (
    PreemptionAsk,
    eligible,
    exhausted_for,
    preemption_score,
    select_victims,
)
from app.structs import Node, NodeUsage, Port, Resources, RunningAllocation
from tests.support.scheduler_harness import alloc, group, job, node, task, usage_of

pytestmark = pytest.mark.unit
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLACING = ("default", "webapp")


def running(
    job_id: str,
    priority: int,
    n: Node,
    index: int,
    *,
    cpu: int = 0,
    mem: int = 0,
    disk: int = 0,
    ports: tuple[int, ...] = (),
    created: int = 1,
    max_parallel: int = 1,
) -> RunningAllocation:
    g = group("g", tasks=[task(cpu=cpu, mem=mem)], disk=disk, static_ports=ports)
    j = job(job_id, [g], priority=priority)
    a = alloc(j, n, index, create_index=created, ports=tuple(Port(f"p{p}", p) for p in ports))
    return RunningAllocation(a, priority, max_parallel)


def seed_node() -> tuple[Node, dict[str, RunningAllocation]]:
    """The seed's node, full in memory and disk: cache (70) a6, batch-analytics (50) a4 a5,
    email-marketing (20) a1 a2. a4 is the younger of the two identical batch allocations."""
    n = node("seed", cpu=3000, mem=5120, disk=2536)
    allocs = {
        "a6": running("cache", 70, n, 0, cpu=1000, mem=2048, disk=512),
        "a5": running("batch-analytics", 50, n, 0, cpu=500, mem=1024, disk=512, created=1),
        "a4": running("batch-analytics", 50, n, 1, cpu=500, mem=1024, disk=512, created=2),
        "a1": running("email-marketing", 20, n, 0, mem=512, disk=800),
        "a2": running("email-marketing", 20, n, 1, mem=512, disk=200),
    }
    return n, allocs


def usage(allocs: list[RunningAllocation]) -> NodeUsage:
    return usage_of([r.alloc for r in allocs]).get(allocs[0].alloc.node_id, NodeUsage()) if allocs else NodeUsage()


def names(chosen: tuple[RunningAllocation, ...] | None, allocs: dict[str, RunningAllocation]) -> set[str]:
    assert chosen is not None
    by_id = {r.alloc.id: name for name, r in allocs.items()}
    return {by_id[r.alloc.id] for r in chosen}


def test_seed_worked_example_preempts_a1_a2_a4() -> None:
    n, allocs = seed_node()
    ask = PreemptionAsk(Resources(cpu=100, memory_mb=2048, disk_mb=1024))
    current = usage(list(allocs.values()))
    assert exhausted_for(n, current, ask) is not None
    chosen = select_victims(n, current, ask, allocs.values(), priority=75, job=PLACING)
    assert names(chosen, allocs) == {"a1", "a2", "a4"}


def test_priority_delta_of_exactly_ten_is_eligible_nine_is_not() -> None:
    assert eligible(60, 50) and not eligible(59, 50) and not eligible(50, 50)
    n = node("n", cpu=1000, mem=1024, disk=1000)
    victim = running("low", 50, n, 0, cpu=1000, mem=1024)
    ask = PreemptionAsk(Resources(cpu=500, memory_mb=512))
    assert select_victims(n, usage([victim]), ask, [victim], priority=60, job=PLACING) == (victim,)
    assert select_victims(n, usage([victim]), ask, [victim], priority=59, job=PLACING) is None


def test_own_job_allocations_are_never_victims() -> None:
    n = node("n", cpu=1000, mem=1024)
    own = running("webapp", 10, n, 0, cpu=1000, mem=1024)
    ask = PreemptionAsk(Resources(cpu=500, memory_mb=512))
    assert select_victims(n, usage([own]), ask, [own], priority=90, job=PLACING) is None


def test_static_port_holder_is_evicted_even_when_resources_fit() -> None:
    n = node("n", cpu=4000, mem=4096)
    holder = running("low", 10, n, 0, cpu=100, mem=100, ports=(8080,))
    other = running("low2", 10, n, 0, cpu=100, mem=100)
    ask = PreemptionAsk(Resources(cpu=100, memory_mb=100), static_ports=(8080,))
    chosen = select_victims(n, usage([holder, other]), ask, [holder, other], priority=50, job=PLACING)
    assert chosen == (holder,)


def test_static_port_held_by_higher_priority_work_cannot_be_freed() -> None:
    n = node("n", cpu=4000, mem=4096)
    holder = running("high", 45, n, 0, cpu=100, mem=100, ports=(8080,))
    low = running("low", 10, n, 0, cpu=100, mem=100)
    ask = PreemptionAsk(Resources(cpu=100, memory_mb=100), static_ports=(8080,))
    assert select_victims(n, usage([holder, low]), ask, [holder, low], priority=50, job=PLACING) is None


def test_max_parallel_penalty_spreads_evictions_across_jobs() -> None:
    n = node("n", cpu=2000, mem=2000)
    a = running("a", 10, n, 0, cpu=500, mem=500)
    b = running("b", 10, n, 0, cpu=600, mem=600)
    rest = running("filler", 60, n, 0, cpu=900, mem=900)
    ask = PreemptionAsk(Resources(cpu=500, memory_mb=500))
    current = usage([a, b, rest])
    assert select_victims(n, current, ask, [a, b, rest], priority=50, job=PLACING) == (a,)
    # Job a already lost its max_parallel (1) in this plan: b is preferred despite a worse fit.
    penalised = select_victims(
        n, current, ask, [a, b, rest], priority=50, job=PLACING, preempted={("default", "a", "g"): 1}
    )
    assert penalised == (b,)


def test_lowest_priority_goes_first() -> None:
    n = node("n", cpu=1000, mem=1000)
    p10 = running("p10", 10, n, 0, cpu=400, mem=400)
    p30 = running("p30", 30, n, 0, cpu=500, mem=500)  # a closer fit, but higher priority
    ask = PreemptionAsk(Resources(cpu=500, memory_mb=500))
    current = usage([p10, p30])
    assert select_victims(n, current, ask, [p10, p30], priority=80, job=PLACING) is not None
    chosen = select_victims(n, current, ask, [p10, p30], priority=80, job=PLACING)
    assert chosen is not None and p10 in chosen


def test_preemption_score_prefers_lower_priority_victims() -> None:
    n = node("n")
    low = [running("x", 10, n, 0)]
    high = [running("y", 60, n, 0), running("z", 60, n, 1)]
    assert 0 < preemption_score(high) < preemption_score(low) <= 1


# --- properties -------------------------------------------------------------------------
@st.composite
def situations(draw: st.DrawFn) -> tuple[Node, list[RunningAllocation], PreemptionAsk, int]:
    n = node("n", cpu=draw(st.integers(500, 4000)), mem=draw(st.integers(512, 4096)), disk=draw(st.integers(0, 3000)))
    allocs: list[RunningAllocation] = []
    used = Resources()
    for i in range(draw(st.integers(0, 10))):
        r = running(
            f"j{draw(st.integers(0, 4))}",
            draw(st.sampled_from([10, 20, 40, 50, 60, 69, 70])),
            n,
            i,
            cpu=draw(st.integers(0, 800)),
            mem=draw(st.integers(0, 800)),
            disk=draw(st.integers(0, 500)),
            ports=draw(st.sampled_from([(), (), (8080 + i,)])),
            created=draw(st.integers(1, 5)),
            max_parallel=draw(st.integers(0, 2)),
        )
        if (used + r.alloc.resources).fits_within(n.allocatable):
            used = used + r.alloc.resources
            allocs.append(r)
    ask = PreemptionAsk(
        Resources(
            cpu=draw(st.integers(0, 1500)), memory_mb=draw(st.integers(0, 1500)), disk_mb=draw(st.integers(0, 800))
        ),
        static_ports=tuple(draw(st.sets(st.sampled_from([8080, 8081, 8082, 9999]), max_size=2))),
        dynamic_ports=draw(st.integers(0, 2)),
    )
    return n, allocs, ask, draw(st.sampled_from([30, 50, 60, 79, 80]))


@SETTINGS
@given(situations())
def test_chosen_set_frees_enough_is_eligible_and_minimal(
    case: tuple[Node, list[RunningAllocation], PreemptionAsk, int],
) -> None:
    n, allocs, ask, priority = case
    current = usage(allocs)
    chosen = select_victims(n, current, ask, allocs, priority=priority, job=PLACING)
    if chosen is None:
        # Then not even evicting every eligible allocation would have been enough.
        eligible_ones = [r for r in allocs if eligible(priority, r.job_priority)]
        assert exhausted_for(n, _without(current, eligible_ones), ask) is not None
        return
    assert len({r.alloc.id for r in chosen}) == len(chosen)
    assert all(priority - r.job_priority >= 10 for r in chosen)
    assert exhausted_for(n, _without(current, chosen), ask) is None
    for victim in chosen:
        rest = [r for r in chosen if r is not victim]
        assert exhausted_for(n, _without(current, rest), ask) is not None, "a victim could have been spared"


def _without(current: NodeUsage, victims: list[RunningAllocation] | tuple[RunningAllocation, ...]) -> NodeUsage:
    for r in victims:
        current = remove_usage(current, r.alloc.resources, r.alloc.host_ports)
    return current
