"""Nomad's node scores. Each applicable score is in [-1, 1]; the final score is their mean."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from app.scheduler.feasibility.feasible import satisfies
from app.scheduler.feasibility.targets import escapes_class, resolve
from app.structs import Affinity, Constraint, Node, Resources, Spread

_MAX_FIT = 18.0
IMPLICIT_TARGET = "*"


def _free_fraction(used: int, total: int) -> float:
    return 1.0 - used / total if total > 0 else 0.0


def fit_score(allocatable: Resources, used_after: Resources, algorithm: str) -> float:
    """Bin pack rewards fuller nodes, spread emptier ones; both on CPU and memory, as
    fractions of the node's allocatable (capacity minus reserved) left after the placement."""
    return fit_score_of(allocatable, used_after.cpu, used_after.memory_mb, algorithm)


def fit_score_of(allocatable: Resources, cpu_after: int, memory_after: int, algorithm: str) -> float:
    """fit_score from the two figures it reads, for the ranker's loop (no Resources built per node)."""
    free_cpu = _free_fraction(cpu_after, allocatable.cpu)
    free_mem = _free_fraction(memory_after, allocatable.memory_mb)
    total = 10**free_cpu + 10**free_mem
    raw = total - 2 if algorithm == "spread" else 20 - total
    return min(max(raw, 0.0), _MAX_FIT) / _MAX_FIT


def anti_affinity(collisions: int, desired: int) -> float | None:
    """Penalty for co-locating instances of one group; only when there already is one."""
    if collisions <= 0:
        return None
    return -(collisions + 1) / max(desired, 1)


def affinity_score(affinities: tuple[Affinity, ...], node: Node) -> float | None:
    """Matching weights over the sum of absolute weights; None when nothing matched."""
    total_weight = sum(abs(a.weight) for a in affinities)
    if not total_weight:
        return None
    matched = sum(a.weight for a in affinities if satisfies(Constraint(a.ltarget, a.operand, a.rtarget), node))
    return matched / total_weight if matched else None


class AffinityScorer:
    """affinity_score for one group's affinities in one pass, kept per computed class: a class
    fixes every value an affinity can read except the unique.* ones (computed_class.py), so the
    nodes of one class score alike, and a placement with affinities scores up to 100 nodes.
    Affinities that read a unique value are scored per node."""

    def __init__(self, affinities: tuple[Affinity, ...]) -> None:
        self.affinities = affinities
        self._per_class = not any(escapes_class(a.ltarget) or escapes_class(a.rtarget) for a in affinities)
        self._by_class: dict[str, float | None] = {}

    def score(self, node: Node) -> float | None:
        if not self._per_class:
            return affinity_score(self.affinities, node)
        try:
            return self._by_class[node.computed_class]
        except KeyError:
            value = self._by_class[node.computed_class] = affinity_score(self.affinities, node)
            return value


@dataclass(frozen=True)
class SpreadRule:
    spread: Spread
    weight_share: float  # this spread's weight over the sum of all spread weights
    desired: dict[str, float]  # value -> desired allocation count; empty = spread evenly


def spread_rules(spreads: tuple[Spread, ...], count: int) -> tuple[SpreadRule, ...]:
    total = sum(s.weight for s in spreads) or 1
    return tuple(SpreadRule(s, s.weight / total, _desired_counts(s, count)) for s in spreads)


def _desired_counts(spread: Spread, count: int) -> dict[str, float]:
    desired = {t.value: t.percent / 100 * count for t in spread.targets}
    if desired and sum(desired.values()) < count:
        desired[IMPLICIT_TARGET] = count - sum(desired.values())  # the rest may go anywhere
    return desired


def spread_score(rules: tuple[SpreadRule, ...], node: Node, used: Callable[[str], Counter[str]]) -> float | None:
    """`used(attribute)` gives the group's live allocations per value of that attribute."""
    total = 0.0
    for rule in rules:
        value = resolve(rule.spread.attribute, node)
        if value is None:
            total -= 1.0  # a node without the attribute gets the maximum penalty
            continue
        counts = used(rule.spread.attribute)
        total += _targeted(rule, value, counts) if rule.desired else _even(value, counts)
    return total or None


def _targeted(rule: SpreadRule, value: str, counts: Counter[str]) -> float:
    desired = rule.desired.get(value, rule.desired.get(IMPLICIT_TARGET))
    if not desired:
        return -1.0
    placed = counts[value] + 1  # including the placement being scored
    return (desired - placed) / desired * rule.weight_share


def _even(value: str, counts: Counter[str]) -> float:
    """Boost values below the current minimum, penalise the ones at an even maximum."""
    present = [c for c in counts.values() if c > 0]
    if not present:
        return 0.0
    low, high, current = min(present), max(present), counts[value]
    if current != low:
        return (low - current) / low
    if low == high:
        return -1.0
    return (high - current) / low
