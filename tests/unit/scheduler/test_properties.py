"""Hypothesis properties over small random clusters: plans never overcommit a node, and
every group ends with min(count, what fits) live allocations."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.scheduler.fit import add_usage, exhausted_dimension
from app.structs import Allocation, Job, Node, NodeUsage, Snapshot
from tests.support.scheduler_harness import alloc, apply, group, job, live, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, list[Allocation]]:
    nodes = [
        node(
            f"n{i}",
            cpu=draw(st.integers(200, 2000)),
            mem=draw(st.integers(256, 2048)),
            dc=draw(st.sampled_from(["dc1", "dc2"])),
            status=draw(st.sampled_from(["ready"] * 4 + ["down"])),
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    groups = [
        group(
            f"g{i}",
            draw(st.integers(0, 8)),
            tasks=[task(cpu=draw(st.integers(50, 600)), mem=draw(st.integers(32, 700)))],
            static_ports=draw(st.sampled_from([[], [], [8080]])),
        )
        for i in range(draw(st.integers(1, 2)))
    ]
    j = job(groups=groups, type=draw(st.sampled_from(["service", "batch"])))
    others = _fitting(
        nodes, [alloc(job("other"), n, i) for i, n in enumerate(draw(st.lists(st.sampled_from(nodes), max_size=4)))]
    )
    existing = _fitting(
        nodes,
        [
            alloc(j, n, i, group_name=groups[0].name)
            for i, n in enumerate(draw(st.lists(st.sampled_from(nodes), max_size=4)))
        ],
        base=others,
    )
    return snapshot(j, nodes, existing, others=others, algorithm=draw(st.sampled_from(["binpack", "spread"]))), others


def _fitting(nodes: list[Node], allocs: list[Allocation], base: Sequence[Allocation] = ()) -> list[Allocation]:
    """Keep only the allocations that fit, so the starting cluster is valid."""
    by_id = {n.id: n for n in nodes}
    usage: dict[uuid.UUID, NodeUsage] = defaultdict(NodeUsage)
    for a in base:
        usage[a.node_id] = add_usage(usage[a.node_id], a.resources, a.host_ports)
    kept = []
    for a in allocs:
        if exhausted_dimension(by_id[a.node_id], usage[a.node_id], a.resources, a.host_ports) is None:
            usage[a.node_id] = add_usage(usage[a.node_id], a.resources, a.host_ports)
            kept.append(a)
    return kept


def _assert_no_overcommit(snap: Snapshot) -> None:
    for n in snap.nodes:
        used = NodeUsage()
        for a in live(snap):
            if a.node_id == n.id:
                assert exhausted_dimension(n, used, a.resources, a.host_ports) is None
                used = add_usage(used, a.resources, a.host_ports)


@SETTINGS
@given(clusters())
def test_plan_never_overcommits(cluster: tuple[Snapshot, list[Allocation]]) -> None:
    snap, others = cluster
    after = apply(snap, run(snap), others=others)
    _assert_no_overcommit(after.__class__(**{**after.__dict__, "allocations": after.allocations + tuple(others)}))


@SETTINGS
@given(clusters())
def test_groups_reach_count_or_fill_what_fits(cluster: tuple[Snapshot, list[Allocation]]) -> None:
    snap, others = cluster
    j = snap.job
    assert isinstance(j, Job)
    result = run(snap)
    after = apply(snap, result, others=others)
    ready = [n for n in snap.nodes if n.ready_for_placement]
    for g in j.task_groups:
        before = [a for a in live(snap, g.name) if a.node_id in {n.id for n in ready}]
        missing = max(0, g.count - len(before))
        new = [a for a in placed(result) if a.task_group == g.name]
        assert len(new) + result.queued_allocations[g.name] == missing
        assert len(live(after, g.name)) == g.count - result.queued_allocations[g.name]
        if result.queued_allocations[g.name]:
            assert g.name in result.failed_tg_allocs
            for n in ready:  # nothing more fits anywhere
                ports = tuple(p.value for net in g.networks for p in net.reserved_ports)
                assert exhausted_dimension(n, after.usage.get(n.id, NodeUsage()), g.resources, ports) is not None
