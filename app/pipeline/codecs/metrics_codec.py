"""Placement metrics on the wire: Nomad's AllocMetric (failed placements, the API's answer) and
the compact form a successful placement's metrics travel in through the plan into
`allocations.metrics` (PlacedMetricsJson), written as text directly for the common case so a big
plan's placements cost little to encode."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from app.scheduler.metrics import MetricsBuilder, NodePool, rounded_scores
from app.structs import SCORERS, AnyMetrics, EncodedMetrics, NodeScore, PlacementMetrics, ScoreParts
from app.wire.allocation import AllocationMetricJson, NodeScoreMetaJson
from app.wire.plan import PlacedMetricsJson, TopScoreJson

_NO_COUNTS: Mapping[str, int] = MappingProxyType({})  # shared: most placements filter nothing


def metrics_to_json(m: PlacementMetrics) -> AllocationMetricJson:
    return {
        "NodesEvaluated": m.nodes_evaluated,
        "NodesFiltered": m.nodes_filtered,
        "NodesInPool": m.nodes_in_pool,
        "NodesAvailable": dict(m.nodes_available),
        "ClassFiltered": dict(m.class_filtered),
        "ConstraintFiltered": dict(m.constraint_filtered),
        "NodesExhausted": m.nodes_exhausted,
        "ClassExhausted": dict(m.class_exhausted),
        "DimensionExhausted": dict(m.dimension_exhausted),
        "QuotaExhausted": [],
        "ResourcesExhausted": {},
        "Scores": None,
        "ScoreMetaData": [_score_to_json(s) for s in m.score_meta],
        "AllocationTime": m.allocation_time_ns,
        "CoalescedFailures": m.coalesced_failures,
    }


def _score_to_json(s: NodeScore) -> NodeScoreMetaJson:
    return {"NodeID": str(s.node_id), "Scores": s.scores, "NormScore": s.norm_score}


def _score_from_json(raw: NodeScoreMetaJson) -> NodeScore:
    get = raw["Scores"].get
    binpack, anti, penalty, affinity, spread, preemption = SCORERS
    parts = (get(binpack), get(anti), get(penalty), get(affinity), get(spread), get(preemption))
    return NodeScore(uuid.UUID(raw["NodeID"]), raw["NormScore"], parts)


def _top_from_json(top: TopScoreJson) -> NodeScore:
    node_id, final, binpack, anti, penalty, affinity, spread, preemption = top  # a list, as JSON reads it
    return NodeScore(_node_id(node_id), final, (binpack, anti, penalty, affinity, spread, preemption))


# A plan's placements name a few thousand nodes among their best scores, each many times: each
# node's ID is parsed and printed once (the cache holds a big cluster's nodes).
@lru_cache(maxsize=16384)
def _node_id(value: str) -> uuid.UUID:
    return uuid.UUID(value)


@lru_cache(maxsize=16384)
def node_text(value: uuid.UUID) -> str:
    return str(value)


def metrics_from_json(raw: AllocationMetricJson) -> PlacementMetrics:
    return PlacementMetrics(
        nodes_evaluated=raw["NodesEvaluated"],
        nodes_filtered=raw["NodesFiltered"],
        nodes_in_pool=raw["NodesInPool"],
        nodes_available=dict(raw["NodesAvailable"]),
        class_filtered=dict(raw["ClassFiltered"]),
        constraint_filtered=dict(raw["ConstraintFiltered"]),
        nodes_exhausted=raw["NodesExhausted"],
        class_exhausted=dict(raw["ClassExhausted"]),
        dimension_exhausted=dict(raw["DimensionExhausted"]),
        coalesced_failures=raw["CoalescedFailures"],
        score_meta=tuple(_score_from_json(s) for s in raw.get("ScoreMetaData") or ()),
        allocation_time_ns=raw.get("AllocationTime", 0),
    )


_PLACED_MAPS = (
    ("ClassFiltered", "class_filtered"),
    ("ConstraintFiltered", "constraint_filtered"),
    ("ClassExhausted", "class_exhausted"),
    ("DimensionExhausted", "dimension_exhausted"),
)


def placed_to_json(m: PlacementMetrics) -> PlacedMetricsJson:
    out: PlacedMetricsJson = {
        "Evaluated": m.nodes_evaluated,
        "Filtered": m.nodes_filtered,
        "Exhausted": m.nodes_exhausted,
        "InPool": m.nodes_in_pool,
        "Available": dict(m.nodes_available),
        "Top": [(node_text(s.node_id), s.norm_score, *s.parts) for s in m.score_meta],
        "Time": m.allocation_time_ns,
    }
    for key, attribute in _PLACED_MAPS:
        counts = getattr(m, attribute)
        if counts:
            out[key] = dict(counts)  # type: ignore[literal-required]
    return out


def placed_text(m: AnyMetrics) -> str:
    """placed_to_json as JSON text without blanks (a big plan carries tens of thousands: the
    bytes go through the plan's row, the COPY and jsonb); an EncodedMetrics as it came. A
    placement that filtered and exhausted nothing, most of a big plan's, is written directly:
    numbers as json.dumps writes them, node IDs (hex and dashes) as they are, the datacenters'
    map through json.dumps (a name may need quoting)."""
    if isinstance(m, str):  # EncodedMetrics: the text itself
        return m
    if m.class_filtered or m.constraint_filtered or m.class_exhausted or m.dimension_exhausted:
        return json.dumps(placed_to_json(m), separators=_COMPACT)
    top = ",".join([_top_text(s) for s in m.score_meta])
    return (
        f'{{"Evaluated":{m.nodes_evaluated},"Filtered":{m.nodes_filtered},"Exhausted":{m.nodes_exhausted},'
        f'"InPool":{m.nodes_in_pool},"Available":{_available_text(tuple(m.nodes_available.items()))},'
        f'"Top":[{top}],"Time":{m.allocation_time_ns}}}'
    )


_COMPACT = (",", ":")


def placed_metrics_text(b: MetricsBuilder) -> EncodedMetrics:
    """placed_text(b.freeze()), made straight from a placement's builder: the worker's
    MetricsOptions.finish. A placement that filtered and exhausted nothing (most of a big plan's)
    gets its text with no PlacementMetrics, NodeScore or rounded tuple built on the way: the
    text up to its best nodes is kept by its counts and pool, each best node's figures by its
    (unrounded) scores, the node's ID text by the node; per placement only the pieces are joined
    and its time printed. The text is what the allocation keeps until its plan is sent: a
    string, which the garbage collector does not trace (the tuples of scores and node IDs it
    did, for every placement of the pass). The others go through freeze and placed_text."""
    if b.class_filtered or b.constraint_filtered or b.class_exhausted or b.dimension_exhausted:
        return placed_text(b.freeze())
    head = _head_text(b.evaluated, b.filtered, b.exhausted, b.pool)
    top = b.top
    if not top:
        return f'{head}],"Time":{b.elapsed_ns}}}'
    top.sort(reverse=True)  # as freeze: by score, then walk order (the builder is dropped after)
    best = ",".join(['["' + node.id_text + _raw_scores_text(final, parts) for final, _, node, parts in top])
    return f'{head}{best}],"Time":{b.elapsed_ns}}}'


@lru_cache(maxsize=1024)
def _head_text(evaluated: int, filtered: int, exhausted: int, pool: NodePool) -> str:
    """A placement's text up to its best nodes: the same for most placements of a pass. Keyed by
    the pool object (whose counts are fixed when it is made: scheduler.metrics.NodePool)."""
    return (
        f'{{"Evaluated":{evaluated},"Filtered":{filtered},"Exhausted":{exhausted},'
        f'"InPool":{pool.in_pool},"Available":{_available_text(pool.available_items)},"Top":['
    )


@lru_cache(maxsize=4096)
def _raw_scores_text(final: float, parts: ScoreParts) -> str:
    """A scored node's entry after its ID (the closing quote, its figures as freeze rounds them
    and _top_text prints them, the closing bracket)."""
    return f'",{_scores_text(*rounded_scores(final, parts))}]'


def _top_text(s: NodeScore) -> str:
    return f'["{node_text(s.node_id)}",{_scores_text(s.norm_score, s.parts)}]'


# The scores are rounded (scheduler.metrics.DIGITS) and nodes of one fill level score alike: a
# big batch pass has a few hundred distinct (score, parts), but tens of thousands of (node,
# score, parts), so the scores' text is kept by the scores alone and the node's text by the node
# (a cache keyed by the whole entry missed on most placements, and printed 7 floats each time).
@lru_cache(maxsize=4096)
def _scores_text(norm_score: float, parts: ScoreParts) -> str:
    return ",".join(["null" if p is None else repr(p) for p in (norm_score, *parts)])


@lru_cache(maxsize=256)
def _available_text(items: tuple[tuple[str, int], ...]) -> str:
    """Ready nodes per datacenter: the same for every placement of a pass."""
    return json.dumps(dict(items), separators=_COMPACT)


def placed_from_json(raw: PlacedMetricsJson) -> PlacementMetrics:
    return PlacementMetrics(
        nodes_evaluated=raw["Evaluated"],
        nodes_filtered=raw["Filtered"],
        nodes_in_pool=raw["InPool"],
        nodes_available=raw["Available"],
        class_filtered=raw.get("ClassFiltered", _NO_COUNTS),
        constraint_filtered=raw.get("ConstraintFiltered", _NO_COUNTS),
        nodes_exhausted=raw["Exhausted"],
        class_exhausted=raw.get("ClassExhausted", _NO_COUNTS),
        dimension_exhausted=raw.get("DimensionExhausted", _NO_COUNTS),
        score_meta=tuple(_top_from_json(top) for top in raw["Top"]),
        allocation_time_ns=raw["Time"],
    )


def placed_to_nomad(raw: PlacedMetricsJson) -> AllocationMetricJson:
    """A stored placement's metrics in Nomad's AllocMetric form, as the API serves them."""
    return metrics_to_json(placed_from_json(raw))
