"""Nomad's AllocMetric: how one selection went (the nodes it read, filtered and found full, the
best nodes' scores, its time), kept on a failed group and on every allocation it placed.

NamedTuples rather than frozen dataclasses: every placement of a 50,000-allocation plan builds
one of each (and the applier decodes them again), and a frozen dataclass's __init__ costs a
setattr per field, several times a tuple's construction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

# Nomad's scorer names, in the order of NodeScore.parts.
SCORERS = (
    "binpack",
    "job-anti-affinity",
    "node-reschedule-penalty",
    "node-affinity",
    "allocation-spread",
    "preemption",
)
# One scorer's normalized part per SCORERS entry; None where that scorer took no part.
ScoreParts = tuple[float | None, float | None, float | None, float | None, float | None, float | None]


class NodeScore(NamedTuple):
    """Nomad's NodeScoreMeta: one of the best-scoring nodes of a selection, its final (mean)
    score and each scorer's normalized part. Positional (SCORERS order), not a map: a big plan
    carries a few of these per placement, so no dict is built until one is shown."""

    node_id: uuid.UUID
    norm_score: float
    parts: ScoreParts

    @property
    def scores(self) -> dict[str, float]:
        """Nomad's Scores map: each scorer that took part, by name."""
        return {name: part for name, part in zip(SCORERS, self.parts, strict=True) if part is not None}


NO_COUNTS: Mapping[str, int] = MappingProxyType({})  # read-only: one shared empty map


class PlacementMetrics(NamedTuple):
    """Nomad's AllocMetric for one selection: why placements failed or how a node was chosen."""

    nodes_evaluated: int = 0
    nodes_filtered: int = 0
    nodes_in_pool: int = 0
    nodes_available: Mapping[str, int] = NO_COUNTS
    class_filtered: Mapping[str, int] = NO_COUNTS
    constraint_filtered: Mapping[str, int] = NO_COUNTS
    nodes_exhausted: int = 0
    class_exhausted: Mapping[str, int] = NO_COUNTS
    dimension_exhausted: Mapping[str, int] = NO_COUNTS
    coalesced_failures: int = 0
    # The best nodes scored, best first (Nomad keeps 5); empty when nothing was scored.
    score_meta: tuple[NodeScore, ...] = ()
    # Nanoseconds the selection took, as the caller's clock measured it; 0 when not measured.
    allocation_time_ns: int = 0


# A placed allocation's metrics as its plan carries them: the compact JSON text of
# `allocations.placement_metrics` (app.wire.plan.PlacedMetricsJson). The applier decodes a plan's
# allocations with these and writes the text as it came: a big plan's metrics are neither parsed
# nor encoded again on their way into the table. A plain str, not a wrapper: a str is not tracked
# by the garbage collector, a NamedTuple holding one is, and a big pass or plan holds tens of
# thousands (each one more object for every collection to walk, in the worker and the applier).
EncodedMetrics = str


# What an allocation may hold as its metrics: the scheduler's, or its plan's text (in the worker
# when it makes the text directly, and in the applier).
AnyMetrics = PlacementMetrics | EncodedMetrics
