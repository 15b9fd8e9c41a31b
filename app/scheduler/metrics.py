"""PlacementMetrics bookkeeping: why nodes were filtered or exhausted during one selection,
and the per-group failure record (the first failure's metrics plus a coalesced count)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from app.structs import Node, PlacementMetrics


class MetricsBuilder:
    __slots__ = (
        "class_exhausted",
        "class_filtered",
        "constraint_filtered",
        "dimension_exhausted",
        "evaluated",
        "exhausted",
        "filtered",
        "pool",
    )

    def __init__(self, pool: NodePool) -> None:
        self.pool = pool
        self.evaluated = 0
        self.filtered = 0
        self.exhausted = 0
        # Plain dicts: one builder is made per selection, so they must be cheap to create.
        self.class_filtered: dict[str, int] = {}
        self.constraint_filtered: dict[str, int] = {}
        self.class_exhausted: dict[str, int] = {}
        self.dimension_exhausted: dict[str, int] = {}

    def filter(self, node: Node, reason: str) -> None:
        self.filtered += 1
        _bump(self.constraint_filtered, reason)
        if node.node_class:  # Nomad keys class metrics by the node's class, when it has one
            _bump(self.class_filtered, node.node_class)

    def exhaust(self, node: Node, dimension: str) -> None:
        self.exhausted += 1
        _bump(self.dimension_exhausted, dimension)
        if node.node_class:
            _bump(self.class_exhausted, node.node_class)

    def freeze(self, coalesced: int = 0) -> PlacementMetrics:
        return PlacementMetrics(
            nodes_evaluated=self.evaluated,
            nodes_filtered=self.filtered,
            nodes_in_pool=self.pool.in_pool,
            nodes_available=dict(self.pool.available),
            class_filtered=dict(self.class_filtered),
            constraint_filtered=dict(self.constraint_filtered),
            nodes_exhausted=self.exhausted,
            class_exhausted=dict(self.class_exhausted),
            dimension_exhausted=dict(self.dimension_exhausted),
            coalesced_failures=coalesced,
        )


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


class NodePool:
    """The per-pass figures every metric shares: nodes in the job's pool, ready nodes per DC."""

    def __init__(self, in_pool: int, candidates: Iterable[Node]) -> None:
        self.in_pool = in_pool
        # Read-only: one NodePool serves every pass on the same node set (Pass._pool).
        self.available: Mapping[str, int] = MappingProxyType(Counter(node.datacenter for node in candidates))


class Failures:
    """Nomad records the first failed placement of a group and only counts the rest."""

    def __init__(self) -> None:
        self._first: dict[str, MetricsBuilder] = {}
        self._coalesced: Counter[str] = Counter()

    def __contains__(self, group: str) -> bool:
        return group in self._first

    def record(self, group: str, metrics: MetricsBuilder) -> None:
        if group in self._first:
            self._coalesced[group] += 1
        else:
            self._first[group] = metrics

    def coalesce(self, group: str) -> None:
        self._coalesced[group] += 1

    def result(self) -> dict[str, PlacementMetrics]:
        return {group: m.freeze(self._coalesced[group]) for group, m in self._first.items()}
