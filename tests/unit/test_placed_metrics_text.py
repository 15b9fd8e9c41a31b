"""The worker's placement metrics: each placed allocation keeps the text its plan carries, made
straight from its selection (metrics_codec.placed_metrics_text). It must be the very text the
frozen metrics encode to (placed_text), byte for byte: readers parse it, and a plan made with
the worker's options must be the plan made with the scheduler's defaults in every other way."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.pipeline.codecs.metrics_codec import placed_metrics_text, placed_text
from app.pipeline.plan_apply.plan_writes import _COPY_TEXT, _text
from app.scheduler import process
from app.scheduler.metrics import MetricsBuilder, MetricsOptions, NodePool
from app.structs import (
    Affinity,
    Allocation,
    Constraint,
    EncodedMetrics,
    Node,
    PlacementMetrics,
    SchedulerResult,
    ScoreParts,
    Snapshot,
    Spread,
)
from tests.support.scheduler_harness import evaluation, group, job, node, placed, snapshot, task

pytestmark = pytest.mark.unit

TEXT = MetricsOptions(finish=placed_metrics_text)
NODES = [node(f"n{i}", dc=("dc1", "dc2")[i % 2], node_class=("", "big")[i % 3 == 0]) for i in range(12)]
# A datacenter whose name JSON must escape: the pool's counts go through json.dumps.
ODD = [node("odd", dc='dc"\\\t1'), node("plain")]

score = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
part = st.one_of(st.none(), score)
parts = st.tuples(score, part, part, part, part, part)
# What a selection may do to a node (score it, filter it for a reason, exhaust a dimension),
# with what it was scored or why: (kind, final score, parts, reason or dimension).
Step = tuple[str, float, ScoreParts, str]
step = st.tuples(
    st.sampled_from(["scored", "scored", "filter", "exhaust"]),
    score,
    parts,
    st.sampled_from(["missing drivers", "${attr.os} = linux", "cpu", "memory"]),
)


def builder(pool: NodePool, nodes: list[Node], steps: list[Step]) -> MetricsBuilder:
    b = MetricsBuilder(pool)
    for i, (kind, final, scored_parts, reason) in enumerate(steps):
        n = nodes[i % len(nodes)]
        b.evaluated += 1
        if kind == "scored":
            b.scored(n, final, scored_parts)
        elif kind == "filter":
            b.filter(n, reason)
        else:
            b.exhaust(n, reason)
    b.elapsed_ns = 12_345 * len(steps)
    return b


@given(st.lists(step, max_size=12), st.sampled_from([NODES, ODD]))
def test_the_text_is_the_frozen_metrics_text(steps: list[Step], nodes: list[Node]) -> None:
    b = builder(NodePool(len(nodes) + 3, nodes), nodes, steps)
    text = placed_metrics_text(b)
    assert type(text) is str  # EncodedMetrics: a plain str, which the garbage collector does not track
    assert text == placed_text(b.freeze())  # freeze after: it sorts the same best nodes again


def test_equal_scores_keep_the_walk_order_and_only_the_best_five_stay() -> None:
    b = MetricsBuilder(NodePool(12, NODES))
    for n in NODES:
        b.evaluated += 1
        b.scored(n, 0.5 if n.name in ("n3", "n7") else 0.25, (0.5, 0.0, 0.0, 0.0, None, None))
    text = placed_metrics_text(b)
    assert text == placed_text(b.freeze())
    named = [n.name for n in NODES if str(n.id) in text]
    assert len(named) == 5 and {"n3", "n7"} <= set(named)
    assert text.index(str(NODES[3].id)) < text.index(str(NODES[7].id))  # of equal scores, the one walked first


def scenarios() -> list[Snapshot]:
    full = node("full", cpu=50)
    windows = Constraint("${attr.kernel.name}", "=", "windows")
    return [
        # a batch job of many placements, one node too small for any of them
        snapshot(job(type="batch", groups=[group(count=40, tasks=[task(cpu=100)])]), [*NODES, full]),
        # a service job scoring every node for its affinity and spread: five best nodes each
        snapshot(
            job(
                groups=[group(count=6, spreads=(Spread("${node.datacenter}", 50),))],
                affinities=(Affinity("${node.class}", "=", "big", 50),),
            ),
            NODES,
        ),
        # a constraint that filters some nodes: those placements' text goes through json.dumps
        snapshot(
            job(groups=[group(count=4, constraints=[Constraint("${node.class}", "!=", "big")])]),
            [*NODES, node("win", attrs={"kernel.name": "windows"})],
        ),
        snapshot(job(type="system"), NODES[:4]),
        snapshot(job(groups=[group(count=3, constraints=[windows])]), NODES),  # nothing placed: failures
        snapshot(job(groups=[group(count=2)]), ODD),
    ]


SCENARIOS = ["batch", "affinity-spread", "filtered", "system", "failed", "odd-dc"]


@pytest.mark.parametrize("snap", scenarios(), ids=SCENARIOS)
def test_a_pass_with_the_workers_options_places_the_same_with_the_same_text(snap: Snapshot) -> None:
    frozen = process(evaluation(snap.job), snap, now_ns=1)
    texts = process(evaluation(snap.job), snap, now_ns=1, metrics=TEXT)
    assert texts.failed_tg_allocs == frozen.failed_tg_allocs  # failures keep their PlacementMetrics
    assert stripped(texts) == stripped(frozen)
    for mine, theirs in zip(placed(texts), placed(frozen), strict=True):
        assert isinstance(theirs.metrics, PlacementMetrics) and isinstance(mine.metrics, EncodedMetrics)
        assert mine.metrics == placed_text(theirs.metrics)


def stripped(result: SchedulerResult) -> list[Allocation]:
    return [dataclasses.replace(a, metrics=None) for a in placed(result)]


def test_switched_off_the_workers_options_leave_placements_without_metrics() -> None:
    snap = scenarios()[0]
    off = process(evaluation(snap.job), snap, now_ns=1, metrics=dataclasses.replace(TEXT, placements=False))
    assert placed(off) and all(a.metrics is None for a in placed(off))


@given(st.text(alphabet=st.sampled_from('ab"{}\\\t\n\r é'), max_size=30))
def test_a_copy_value_is_escaped_exactly_when_it_needs_it(value: str) -> None:
    assert _text(value) == value.translate(_COPY_TEXT)
