"""PlacementMetrics bookkeeping: why nodes were filtered or exhausted during one selection, the
best nodes it scored and its time, and the per-group failure record (the first failure's
metrics plus a coalesced count)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from app.structs import AnyMetrics, Node, NodeScore, PlacementMetrics, ScoreParts

TOP_SCORES = 5  # Nomad's ScoreMetaData keeps the 5 best nodes of a selection
# Scores are reported to 6 decimal places: `alloc status` shows 3 significant digits, and the full
# 17 of a float would make a big plan's metrics a third longer (each placement carries a few).
DIGITS = 6
_EMPTY: Mapping[str, int] = MappingProxyType({})


def no_clock() -> int:
    return 0


@dataclass(frozen=True)
class MetricsOptions:
    """How a pass records placement metrics. The pure scheduler reads no clock of its own: the
    worker hands it a monotonic one in nanoseconds (time.perf_counter_ns) that times each
    selection, and tests keep `no_clock` (AllocationTime 0, plans deterministic).
    `placements=False` leaves successful placements without metrics, as before they had any
    (failures keep theirs): the placement benchmark's baseline.

    `finish` makes a placed allocation's metrics of its selection's builder; None: freeze(), the
    PlacementMetrics. The worker hands the codec's stored text instead (metrics_codec.
    placed_metrics_text, as pure as freeze): a big pass then builds no PlacementMetrics and
    NodeScore tuples per placement only to encode them and keep them alive (and traced by the
    garbage collector) until its plan is sent. Failures always freeze."""

    placements: bool = True
    clock: Callable[[], int] = no_clock
    finish: Callable[[MetricsBuilder], AnyMetrics] | None = None


DEFAULT_METRICS = MetricsOptions()


class MetricsBuilder:
    __slots__ = (
        "class_exhausted",
        "class_filtered",
        "constraint_filtered",
        "dimension_exhausted",
        "elapsed_ns",
        "evaluated",
        "exhausted",
        "filtered",
        "pool",
        "top",
    )

    def __init__(self, pool: NodePool, keep_scores: bool = True) -> None:
        self.pool = pool
        self.evaluated = 0
        self.filtered = 0
        self.exhausted = 0
        self.elapsed_ns = 0
        # Plain dicts: one builder is made per selection, so they must be cheap to create.
        self.class_filtered: dict[str, int] = {}
        self.constraint_filtered: dict[str, int] = {}
        self.class_exhausted: dict[str, int] = {}
        self.dimension_exhausted: dict[str, int] = {}
        # The best scored nodes as a min-heap of at most TOP_SCORES (score, -order, node, parts):
        # the worst kept one is at [0], and of equal scores the later node goes first. None: not kept.
        self.top: list[tuple[float, int, Node, ScoreParts]] | None = [] if keep_scores else None

    def scored(self, node: Node, final: float, parts: ScoreParts) -> None:
        """Keep `node` if it is among the best so far: a tuple per scored node, no dict."""
        top = self.top
        if top is None:
            return
        entry = (final, -self.evaluated, node, parts)  # evaluated: this node's rank in the walk
        if len(top) < TOP_SCORES:
            heapq.heappush(top, entry)
        elif final > top[0][0]:
            heapq.heapreplace(top, entry)

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
        """The metrics as they stand. The maps are the builder's own, not copies: a builder is
        dropped once frozen, and most selections leave them empty (shared read-only `_EMPTY`).
        Built as a plain tuple in PlacementMetrics' field order: every placement of a big pass
        freezes one, and the NamedTuple's keyword constructor is a Python call (about a third of
        the freeze). tests/unit/scheduler/test_placement_metrics.py checks the order."""
        return _new_metrics(
            (
                self.evaluated,
                self.filtered,
                self.pool.in_pool,
                self.pool.available,
                self.class_filtered or _EMPTY,
                self.constraint_filtered or _EMPTY,
                self.exhausted,
                self.class_exhausted or _EMPTY,
                self.dimension_exhausted or _EMPTY,
                coalesced,
                self._score_meta(),
                self.elapsed_ns,
            )
        )

    def _score_meta(self) -> tuple[NodeScore, ...]:
        top = self.top
        if not top:
            return ()
        top.sort(reverse=True)  # by score, then walk order; the builder is dropped once frozen
        return tuple([_new_score((node.id, *rounded_scores(final, parts))) for final, _, node, parts in top])


def _new_metrics(fields: tuple[object, ...]) -> PlacementMetrics:
    return tuple.__new__(PlacementMetrics, fields)  # the C constructor: no Python frame


def _new_score(fields: tuple[object, ...]) -> NodeScore:
    return tuple.__new__(NodeScore, fields)  # the C constructor: no Python frame


# A pass scores nodes at a few hundred distinct fill levels, so the same (score, parts) recur
# across its placements: each is rounded once. Pure (no state beyond the cache of a function).
@lru_cache(maxsize=4096)
def rounded_scores(final: float, parts: ScoreParts) -> tuple[float, ScoreParts]:
    return round(final, DIGITS), _rounded(parts)


def _rounded(parts: ScoreParts) -> ScoreParts:
    binpack, anti, penalty, affinity, spread, preemption = parts
    return (
        None if binpack is None else round(binpack, DIGITS),
        anti if not anti else round(anti, DIGITS),  # mostly 0.0 or None: nothing to round
        penalty,  # RESCHEDULE_PENALTY or 0.0
        affinity if not affinity else round(affinity, DIGITS),
        spread if not spread else round(spread, DIGITS),
        preemption if not preemption else round(preemption, DIGITS),
    )


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


class NodePool:
    """The per-pass figures every metric shares: nodes in the job's pool, ready nodes per DC."""

    def __init__(self, in_pool: int, candidates: Iterable[Node]) -> None:
        self.in_pool = in_pool
        # Read-only: one NodePool serves every pass on the same node set (Pass._pool).
        self.available: Mapping[str, int] = MappingProxyType(Counter(node.datacenter for node in candidates))
        # The same counts as a hashable key: a codec keeps their text by it, not per placement.
        self.available_items: tuple[tuple[str, int], ...] = tuple(self.available.items())


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
