"""`alloc status -verbose`'s placement metrics, in Nomad's layout: the counts in the allocation's
key-value block, then a "Placement Metrics" section of filter and exhaustion lines and a table of
the best nodes' scores by scorer (Nomad's formatAllocMetrics)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from app.cli.support.output import columns

_UNITS = ((1_000_000, "ms", 6), (1_000, "µs", 3))


def go_duration(nanos: int) -> str:
    """A duration as Go's time.Duration prints it ("0s", "850ns", "164.687µs", "1.5s", "2m3s")."""
    if nanos < 0:
        return "-" + go_duration(-nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{nanos}ns"
    for unit, suffix, digits in _UNITS:
        if unit <= nanos < 1_000_000_000:
            return _fraction(nanos, unit, digits) + suffix
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _fraction(rest, 1_000_000_000, 9) + "s"
    if hours:
        return f"{hours}h{minutes}m{seconds}"
    return f"{minutes}m{seconds}" if minutes else seconds


def _fraction(nanos: int, unit: int, digits: int) -> str:
    whole, rest = divmod(nanos, unit)
    return f"{whole}.{str(rest).zfill(digits).rstrip('0')}" if rest else str(whole)


def basic_lines(metrics: Mapping[str, Any]) -> list[tuple[str, object]]:
    """The verbose key-value lines Nomad adds to the allocation's block."""
    return [
        ("Evaluated Nodes", metrics.get("NodesEvaluated", 0)),
        ("Filtered Nodes", metrics.get("NodesFiltered", 0)),
        ("Exhausted Nodes", metrics.get("NodesExhausted", 0)),
        ("Allocation Time", go_duration(int(metrics.get("AllocationTime") or 0))),
        ("Failures", metrics.get("CoalescedFailures", 0)),
    ]


def section(metrics: Mapping[str, Any]) -> list[str]:
    return ["", "Placement Metrics", *_reasons(metrics, "  "), *_score_table(metrics.get("ScoreMetaData") or [])]


def _reasons(metrics: Mapping[str, Any], prefix: str) -> Iterator[str]:
    if not metrics.get("NodesEvaluated"):
        yield f"{prefix}* No nodes were eligible for evaluation"
    for dc, available in sorted((metrics.get("NodesAvailable") or {}).items()):
        if available == 0:
            yield f'{prefix}* No nodes are available in datacenter "{dc}"'
    for node_class, count in sorted((metrics.get("ClassFiltered") or {}).items()):
        yield f'{prefix}* Class "{node_class}": {count} nodes excluded by filter'
    for constraint, count in sorted((metrics.get("ConstraintFiltered") or {}).items()):
        yield f'{prefix}* Constraint "{constraint}": {count} nodes excluded by filter'
    if metrics.get("NodesExhausted"):
        yield f"{prefix}* Resources exhausted on {metrics['NodesExhausted']} nodes"
    for node_class, count in sorted((metrics.get("ClassExhausted") or {}).items()):
        yield f'{prefix}* Class "{node_class}" exhausted on {count} nodes'
    for dimension, count in sorted((metrics.get("DimensionExhausted") or {}).items()):
        yield f'{prefix}* Dimension "{dimension}" exhausted on {count} nodes'
    for quota in metrics.get("QuotaExhausted") or []:
        yield f'{prefix}* Quota limit hit "{quota}"'


def _score_table(scores: list[Mapping[str, Any]]) -> list[str]:
    """Nomad's table: a column per scorer of the first (best) node, by name, then the final score;
    each figure as Go's %.3g."""
    if not scores:
        return []
    scorers = sorted(scores[0].get("Scores") or {})
    rows = [["Node", *scorers, "final score"]]
    for meta in scores:
        parts = meta.get("Scores") or {}
        rows.append([str(meta.get("NodeID", "")), *(f"{parts.get(s, 0):.3g}" for s in scorers), _g(meta)])
    return columns(rows)


def _g(meta: Mapping[str, Any]) -> str:
    return f"{meta.get('NormScore', 0):.3g}"
