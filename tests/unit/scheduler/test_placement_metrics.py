"""Every placement carries its selection's metrics (Nomad's Alloc.Metrics): the counts of
that selection, the best scored nodes with each scorer's part, and its time on the caller's clock."""

from __future__ import annotations

import itertools

import pytest

from app.scheduler import process
from app.scheduler.metrics import TOP_SCORES, MetricsBuilder, MetricsOptions, NodePool
from app.structs import Affinity, Allocation, Constraint, NodeScore, PlacementMetrics, Spread
from tests.support.scheduler_harness import NOW, evaluation, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit

NODES = [node(f"n{i}") for i in range(8)]


def scheduled(a: Allocation) -> PlacementMetrics:
    """The metrics the scheduler gave `a` (an applier's decoded plan holds their text instead)."""
    assert isinstance(a.metrics, PlacementMetrics)
    return a.metrics


def test_a_placement_carries_the_counts_and_the_best_nodes_scores() -> None:
    full = node("full", cpu=50)
    windows = Constraint("${attr.kernel.name}", "=", "windows")
    on_n1 = Affinity("${node.unique.name}", "=", "n1", 50)
    j = job(groups=[group(count=1, tasks=[task(cpu=100)])], affinities=(on_n1,))
    j_filtered = job(id="other", groups=[group(count=1, constraints=[windows])])
    (a,) = placed(run(snapshot(j, [*NODES, full])))
    m = scheduled(a)
    assert m.nodes_evaluated == len(NODES) + 1  # an affinity scores up to 100 nodes: all of them
    assert m.nodes_exhausted == 1 and m.dimension_exhausted == {"cpu": 1}
    assert m.nodes_in_pool == len(NODES) + 1 and m.nodes_available == {"dc1": len(NODES) + 1}
    assert len(m.score_meta) == TOP_SCORES
    best = m.score_meta[0]
    assert best.node_id == a.node_id == NODES[1].id  # the affinity's node won, and is reported first
    assert [s.norm_score for s in m.score_meta] == sorted((s.norm_score for s in m.score_meta), reverse=True)
    assert set(best.scores) == {"binpack", "job-anti-affinity", "node-reschedule-penalty", "node-affinity"}
    assert best.scores["node-affinity"] == 1.0
    assert best.norm_score == pytest.approx(sum(best.scores.values()) / 2)  # binpack and the affinity applied
    assert m.allocation_time_ns == 0  # no clock given: the pass stays a pure function
    # No node passed the constraint: a failure keeps its metrics as before, with no scores.
    failed = run(snapshot(j_filtered, NODES)).failed_tg_allocs["g"]
    assert failed.nodes_filtered == len(NODES) and failed.score_meta == ()


def test_a_second_instance_sees_the_anti_affinity_and_the_spread() -> None:
    j = job(groups=[group(count=2, spreads=(Spread("${node.datacenter}", 50),))])
    allocs = placed(run(snapshot(j, NODES[:2])))  # both nodes scored for both placements
    metrics = [scheduled(a) for a in allocs]
    assert len(metrics) == len(allocs)
    parts = [s.scores for m in metrics for s in m.score_meta]
    assert all("allocation-spread" in p for p in parts)
    assert any(p["job-anti-affinity"] < 0 for p in parts)  # the second placement met the first


def test_the_time_comes_from_the_given_clock() -> None:
    ticks = itertools.count(0, 1000)
    options = MetricsOptions(clock=lambda: next(ticks))
    j = job(groups=[group(count=2)])
    result = process(evaluation(j), snapshot(j, NODES), now_ns=NOW, metrics=options)
    metrics = [scheduled(a) for a in placed(result)]
    assert sorted(m.allocation_time_ns for m in metrics) == [1000, 1000]


def test_switched_off_placements_carry_no_metrics_but_failures_keep_theirs() -> None:
    off = MetricsOptions(placements=False)
    j = job(groups=[group(count=2)])
    result = process(evaluation(j), snapshot(j, NODES), now_ns=NOW, metrics=off)
    assert [a.metrics for a in placed(result)] == [None, None]
    big = job(groups=[group(count=1, tasks=[task(cpu=100_000)])])
    failed = process(evaluation(big), snapshot(big, NODES), now_ns=NOW, metrics=off).failed_tg_allocs["g"]
    assert failed.nodes_exhausted == len(NODES)


def test_a_system_allocation_carries_its_one_node() -> None:
    j = job(type="system")
    allocs = placed(run(snapshot(j, NODES[:2])))
    for a in allocs:
        assert scheduled(a).nodes_evaluated == 1
        (only,) = scheduled(a).score_meta
        assert only.node_id == a.node_id and set(only.scores) == {"binpack"}


def test_a_frozen_builder_fills_each_field_by_its_name() -> None:
    """freeze builds the tuple positionally (for speed): each figure must land in its own field."""
    small, big = node("small", node_class="c1"), node("big", dc="dc2")
    builder = MetricsBuilder(NodePool(7, [small, big]))
    builder.evaluated = 4
    builder.filter(small, "missing drivers")
    builder.exhaust(small, "memory")
    builder.exhaust(big, "cpu")
    builder.scored(big, 0.1234567, (0.2469134, 0.0, 0.0, 0.0, None, None))
    builder.evaluated += 1
    builder.scored(small, 0.5, (0.5, None, None, None, None, None))
    builder.elapsed_ns = 99
    assert builder.freeze(coalesced=3) == PlacementMetrics(
        nodes_evaluated=5,
        nodes_filtered=1,
        nodes_in_pool=7,
        nodes_available={"dc1": 1, "dc2": 1},
        class_filtered={"c1": 1},
        constraint_filtered={"missing drivers": 1},
        nodes_exhausted=2,
        class_exhausted={"c1": 1},
        dimension_exhausted={"memory": 1, "cpu": 1},
        coalesced_failures=3,
        score_meta=(
            NodeScore(small.id, 0.5, (0.5, None, None, None, None, None)),
            NodeScore(big.id, 0.123457, (0.246913, 0.0, 0.0, 0.0, None, None)),  # rounded to 6 places
        ),
        allocation_time_ns=99,
    )
