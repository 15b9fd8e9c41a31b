"""Feasibility filters, their metrics, class caching, and the co-location rules."""

from __future__ import annotations

import pytest

from app.scheduler.feasibility.feasible import MISSING_DRIVERS, Feasibility
from app.scheduler.fit import CPU, MEMORY, PORTS
from app.structs import Allocation, Constraint, Node, Port
from tests.support.scheduler_harness import alloc, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit


def _nodes_for(result_nodes: list[Allocation]) -> set[str]:
    return {a.node_name for a in result_nodes}


@pytest.mark.parametrize(
    ("datacenters", "expected"),
    [(("dc1",), {"a"}), (("dc*",), {"a", "b"}), (("*",), {"a", "b", "c"}), (("eu-?", "dc2"), {"b", "c"})],
)
def test_datacenter_globs(datacenters: tuple[str, ...], expected: set[str]) -> None:
    nodes = [node("a", dc="dc1"), node("b", dc="dc2"), node("c", dc="eu-1")]
    j = job(groups=[group(count=6)], datacenters=datacenters)
    assert _nodes_for(placed(run(snapshot(j, nodes)))) == expected


@pytest.mark.parametrize(("pool", "expected"), [("default", {"a"}), ("gpu", {"b"}), ("all", {"a", "b"})])
def test_node_pools(pool: str, expected: set[str]) -> None:
    nodes = [node("a"), node("b", pool="gpu")]
    j = job(groups=[group(count=4)], pool=pool)
    assert _nodes_for(placed(run(snapshot(j, nodes)))) == expected


@pytest.mark.parametrize(
    "unready",
    [
        node("x", status="down"),
        node("x", status="initializing"),
        node("x", eligibility="ineligible"),
        node("x", draining=True),
    ],
)
def test_unready_nodes_get_nothing(unready: Node) -> None:
    j = job(groups=[group(count=3)])
    result = run(snapshot(j, [unready]))
    assert not placed(result)
    metrics = result.failed_tg_allocs["g"]
    assert metrics.nodes_evaluated == 0 and metrics.nodes_available == {}
    assert metrics.coalesced_failures == 2 and result.queued_allocations == {"g": 3}


def test_constraint_and_driver_filtering_is_recorded() -> None:
    nodes = [
        node("win", attrs={"kernel.name": "windows"}, node_class="small"),
        node("nodocker", drivers=("raw_exec",)),
        node("ok1"),
    ]
    j = job(
        groups=[group(count=1, tasks=[task(driver="mock", constraints=[Constraint("${attr.cpu}", "is_set", "")])])],
        constraints=(Constraint("${attr.kernel.name}", "=", "linux"),),
    )
    result = run(snapshot(j, nodes))
    metrics = result.failed_tg_allocs["g"]
    assert metrics.nodes_evaluated == 3 and metrics.nodes_filtered == 3
    assert metrics.constraint_filtered == {
        "${attr.kernel.name} = linux": 1,
        MISSING_DRIVERS: 1,
        "${attr.cpu} is_set ": 1,
    }
    assert metrics.class_filtered == {"small": 1}
    assert metrics.nodes_in_pool == 3 and metrics.nodes_available == {"dc1": 3}


def test_fitting_node_is_found_past_full_ones() -> None:
    nodes = [node("small", cpu=150), node("lowmem", mem=100), node("big")]
    j = job(groups=[group(count=3, tasks=[task(cpu=200, mem=200)])])
    assert [a.node_name for a in placed(run(snapshot(j, nodes)))] == ["big"] * 3


def test_exhaustion_records_dimensions() -> None:
    nodes = [node("small", cpu=100, node_class="tiny"), node("lowmem", mem=100)]
    j = job(groups=[group(count=2, tasks=[task(cpu=120, mem=110)])])
    result = run(snapshot(j, nodes))
    assert not placed(result)
    metrics = result.failed_tg_allocs["g"]
    assert metrics.nodes_evaluated == 2 and metrics.nodes_exhausted == 2
    assert metrics.dimension_exhausted == {MEMORY: 1, CPU: 1}
    assert metrics.class_exhausted == {"tiny": 1} and metrics.coalesced_failures == 1


def test_static_port_collision_is_exhaustion() -> None:
    n = node("a", reserved_ports=[8080])
    result = run(snapshot(job(groups=[group(static_ports=[8080])]), [n]))
    assert result.failed_tg_allocs["g"].dimension_exhausted == {PORTS: 1}


def test_dynamic_port_range_exhaustion() -> None:
    n = node("a", min_port=20000, max_port=20001)
    result = run(snapshot(job(groups=[group(count=2, dynamic_ports=1)]), [n]))
    assert len(placed(result)) == 2
    assert {a.ports[0].value for a in placed(result)} == {20000, 20001}
    result = run(snapshot(job(groups=[group(count=3, dynamic_ports=1)]), [n]))
    assert result.failed_tg_allocs["g"].dimension_exhausted == {PORTS: 1}


def test_dynamic_ports_avoid_used_reserved_and_static() -> None:
    n = node("a", reserved_ports=[20000], min_port=20000, max_port=20003)
    other = alloc(job("other"), n, 0, ports=(_port(20001),))
    j = job(groups=[group(static_ports=[20002], dynamic_ports=1)])
    (a,) = placed(run(snapshot(j, [n], others=[other])))
    assert sorted(p.value for p in a.ports) == [20002, 20003]


def _port(value: int) -> Port:
    return Port("x", value)


def test_class_cache_and_eligibility() -> None:
    nodes = [node(f"l{i}", node_class="linux") for i in range(3)] + [
        node("w", node_class="win", attrs={"kernel.name": "windows"})
    ]
    j = job(groups=[group(count=3)], constraints=(Constraint("${attr.kernel.name}", "=", "linux"),))
    result = run(snapshot(j, nodes))
    assert sorted(result.class_eligibility.values()) == [False, True]
    assert result.class_eligibility[nodes[3].computed_class] is False
    assert result.escaped_computed_class is False


def test_unique_constraints_escape_and_are_checked_per_node() -> None:
    nodes = [node("a"), node("b")]  # same computed class
    assert nodes[0].computed_class == nodes[1].computed_class
    j = job(groups=[group(count=2, constraints=[Constraint("${node.unique.name}", "=", "b")])])
    result = run(snapshot(j, nodes))
    assert {a.node_name for a in placed(result)} == {"b"}
    assert result.escaped_computed_class is True


def test_feasibility_caches_per_class() -> None:
    calls = []
    j = job(constraints=(Constraint("${attr.kernel.name}", "=", "linux"),))
    feas = Feasibility(j)
    import app.scheduler.feasibility.feasible as feasible

    original = feasible.satisfies

    def counting(constraint: Constraint, node: Node) -> bool:
        calls.append(constraint)
        return original(constraint, node)

    feasible.satisfies = counting
    try:
        for i in range(10):
            assert feas.check(node(f"n{i}"), j.task_groups[0]) is None
    finally:
        feasible.satisfies = original
    assert len(calls) == 1


def test_distinct_hosts_group_level() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    g = group(count=4, constraints=[Constraint("", "distinct_hosts", "true")])
    result = run(snapshot(job(groups=[g]), nodes))
    assert len({a.node_id for a in placed(result)}) == 3
    metrics = result.failed_tg_allocs["g"]
    assert metrics.constraint_filtered == {"distinct_hosts": 3}


def test_distinct_hosts_job_level_spans_groups() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    j = job(groups=[group("a", 2), group("b", 2)], constraints=(Constraint("", "distinct_hosts", ""),))
    result = run(snapshot(j, nodes))
    assert len(placed(result)) == 3 and len({a.node_id for a in placed(result)}) == 3


@pytest.mark.parametrize(("limit", "expected"), [("", 2), ("2", 4)])
def test_distinct_property(limit: str, expected: int) -> None:
    nodes = [node(f"n{i}", meta={"rack": f"r{i % 2}"}) for i in range(6)]
    g = group(count=6, constraints=[Constraint("${meta.rack}", "distinct_property", limit)])
    result = run(snapshot(job(groups=[g]), nodes))
    assert len(placed(result)) == expected
    assert result.failed_tg_allocs["g"].constraint_filtered == {"distinct_property": 6}


def test_distinct_property_counts_existing_allocations() -> None:
    nodes = [node(f"n{i}", meta={"rack": f"r{i % 2}"}) for i in range(4)]
    g = group(count=2, constraints=[Constraint("${meta.rack}", "distinct_property", "")])
    j = job(groups=[g])
    (new,) = placed(run(snapshot(j, nodes, [alloc(j, nodes[0], 0)])))
    assert new.node_id in {nodes[1].id, nodes[3].id}
