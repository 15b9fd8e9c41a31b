"""Scores and their effect on which node is picked."""

from __future__ import annotations

from collections import Counter

import pytest

from app.scheduler import rank
from app.scheduler.place import GroupAsk, score_limit
from app.scheduler.rank import AffinityScorer, affinity_score, anti_affinity, fit_score, spread_rules, spread_score
from app.structs import Affinity, Allocation, Node, Resources, Spread, SpreadTarget
from tests.support.scheduler_harness import alloc, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit
ALLOC = Resources(cpu=1000, memory_mb=1000)


@pytest.mark.parametrize(
    ("used", "algorithm", "expected"),
    [
        (Resources(cpu=1000, memory_mb=1000), "binpack", 1.0),  # 20 - (1 + 1) = 18
        (Resources(), "binpack", 0.0),  # 20 - 20 clamps to 0
        (Resources(cpu=500, memory_mb=500), "binpack", (20 - 2 * 10**0.5) / 18),
        (Resources(), "spread", 1.0),  # 20 - 2 = 18
        (Resources(cpu=1000, memory_mb=1000), "spread", 0.0),
    ],
)
def test_fit_score(used: Resources, algorithm: str, expected: float) -> None:
    assert fit_score(ALLOC, used, algorithm) == pytest.approx(expected)


def test_anti_affinity_formula() -> None:
    assert anti_affinity(0, 3) is None
    assert anti_affinity(1, 4) == pytest.approx(-0.5)
    assert anti_affinity(2, 3) == pytest.approx(-1.0)


def test_affinity_formula() -> None:
    n = node("a", meta={"rack": "r1"})
    affinities = (Affinity("${meta.rack}", "=", "r1", 50), Affinity("${node.datacenter}", "=", "dc9", 50))
    assert affinity_score(affinities, n) == pytest.approx(0.5)
    assert affinity_score((Affinity("${meta.rack}", "=", "r1", -25), affinities[1]), n) == pytest.approx(-1 / 3)
    assert affinity_score(affinities[1:], n) is None


AFFINITIES = (Affinity("${meta.rack}", "=", "r1", 50), Affinity("${node.datacenter}", "=", "dc2", -20))


def test_affinity_scores_kept_per_class_are_each_nodes_own() -> None:
    nodes = [node(f"n{i}", dc=f"dc{i % 3}", meta={"rack": f"r{i % 2}"}) for i in range(12)]
    scorer = AffinityScorer(AFFINITIES)
    assert [scorer.score(n) for n in nodes] == [affinity_score(AFFINITIES, n) for n in nodes]
    assert {scorer.score(n) for n in nodes} == {1.0 * 50 / 70, -20 / 70, 30 / 70, None}


def test_nodes_of_one_class_are_scored_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Counter[str]()

    def counted(affinities: tuple[Affinity, ...], n: Node) -> float | None:
        calls[n.computed_class] += 1
        return affinity_score(affinities, n)

    monkeypatch.setattr(rank, "affinity_score", counted)
    scorer = AffinityScorer(AFFINITIES)
    nodes = [node(f"n{i}", meta={"rack": "r1" if i < 5 else "r2"}) for i in range(10)]
    scores = [scorer.score(n) for n in nodes for _ in range(3)]
    assert scores == [pytest.approx(50 / 70)] * 15 + [None] * 15
    assert sorted(calls.values()) == [1, 1] and len(calls) == 2


def test_an_affinity_on_a_unique_value_scores_every_node() -> None:
    # Both nodes are of one class (unique.* values are not part of it), yet only one is preferred.
    a, b = node("a"), node("b")
    assert a.computed_class == b.computed_class
    scorer = AffinityScorer((Affinity("${node.unique.name}", "=", "b", 50),))
    assert [scorer.score(a), scorer.score(b), scorer.score(a)] == [None, 1.0, None]


def test_spread_targeted_and_even_formulas() -> None:
    targeted = spread_rules((Spread("${node.datacenter}", 100, (SpreadTarget("dc1", 70),)),), 10)
    n1, n2 = node("a", dc="dc1"), node("b", dc="dc2")
    counts: Counter[str] = Counter({"dc1": 3})
    assert spread_score(targeted, n1, lambda _: counts) == pytest.approx((7 - 4) / 7)
    assert spread_score(targeted, n2, lambda _: counts) == pytest.approx((3 - 1) / 3)  # implicit "*" target
    even = spread_rules((Spread("${node.datacenter}", 50),), 10)
    assert spread_score(even, n2, lambda _: Counter({"dc1": 2})) == pytest.approx(1.0)
    assert spread_score(even, n1, lambda _: Counter({"dc1": 2, "dc2": 2})) == pytest.approx(-1.0)
    assert spread_score(even, node("c", dc="dc1"), lambda _: Counter()) is None
    missing = spread_rules((Spread("${meta.zone}", 50),), 10)
    assert spread_score(missing, n1, lambda _: Counter()) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    ("kind", "count", "candidates", "expected"),
    [
        ("batch", 5, 5000, 2),
        ("service", 5, 5000, 13),
        ("service", 5, 3, 2),
        ("spread", 5, 10, 100),
        ("spread", 300, 10, 300),
    ],
)
def test_score_limit(kind: str, count: int, candidates: int, expected: int) -> None:
    spreads = (Spread("${node.datacenter}", 50),) if kind == "spread" else ()
    j = job(groups=[group(count=count, spreads=spreads)])
    assert score_limit(GroupAsk.of(j, j.task_groups[0]), kind == "batch", candidates) == expected


def _two_nodes() -> tuple[Node, Node, Allocation]:
    full, empty = node("full"), node("empty")
    filler = alloc(job("other"), full, 0)
    filler = filler.__class__(**{**filler.__dict__, "resources": Resources(cpu=3000, memory_mb=6000)})
    return full, empty, filler


@pytest.mark.parametrize(("algorithm", "winner"), [("binpack", "full"), ("spread", "empty")])
def test_binpack_prefers_fuller_and_spread_emptier(algorithm: str, winner: str) -> None:
    full, empty, filler = _two_nodes()
    j = job(groups=[group(count=1, tasks=[task(cpu=500, mem=500)])])
    for key in ("a", "b", "c", "d"):  # whatever the shuffled order
        (a,) = placed(run(snapshot(j, [full, empty], others=[filler], algorithm=algorithm), key=key))
        assert a.node_name == winner


def test_anti_affinity_spreads_a_group_across_nodes() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    j = job(groups=[group(count=4)])
    assert len({a.node_id for a in placed(run(snapshot(j, nodes)))}) == 4


def test_node_affinity_attracts() -> None:
    nodes = [node(f"n{i}", meta={"tier": "gold" if i == 3 else "bronze"}) for i in range(8)]
    g = group(count=1, affinities=(Affinity("${meta.tier}", "=", "gold", 100),))
    for key in ("a", "b", "c"):
        (a,) = placed(run(snapshot(job(groups=[g]), nodes), key=key))
        assert a.node_name == "n3"


def test_spread_block_balances_datacenters() -> None:
    nodes = [node(f"a{i}", dc="dc1") for i in range(6)] + [node("b0", dc="dc2")]
    g = group(count=4, spreads=(Spread("${node.datacenter}", 100, (SpreadTarget("dc1", 50), SpreadTarget("dc2", 50))),))
    dcs = Counter(
        n.datacenter for a in placed(run(snapshot(job(groups=[g]), nodes))) for n in nodes if n.id == a.node_id
    )
    assert dcs == {"dc1": 2, "dc2": 2}
