"""Choosing which lower-priority allocations to evict so a placement fits on a node: Nomad's
PreemptForTaskGroup over every dimension corral schedules (CPU, memory, disk, static and
dynamic host ports), followed by one more trim than Nomad does, so that the chosen set never
contains an allocation whose eviction is not needed.

1. Candidates are live allocations of other jobs on the node whose job priority is at least
   PRIORITY_DELTA below the placing job's. Nomad's docs say "more than 10", but its code skips
   a candidate only when the difference is below 10, so a difference of exactly 10 is eligible;
   corral follows the code.
2. Holders of a static port the placement needs must go first: nothing else frees that port.
3. Then priority groups from the lowest upward; within a group, repeatedly the candidate closest
   to the resources still missing (Euclidean distance over the normalised CPU, memory and disk
   shortfall), plus a penalty of 50 per eviction beyond the job group's migrate.max_parallel,
   until the placement fits.
4. Nomad's trim: sort the chosen set by distance to the whole ask, largest first, and keep the
   shortest prefix with which the placement fits.
5. corral's trim: try dropping each remaining victim, highest priority first; drop it if the
   placement still fits without it. The set only shrinks, so one pass leaves every victim needed.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.scheduler import ports
from app.scheduler.fit import PORTS, exhausted_dimension, remove_usage
from app.structs import Node, NodeUsage, Resources, RunningAllocation

PRIORITY_DELTA = 10
MAX_PARALLEL_PENALTY = 50.0
# Nomad's logistic preemption score: a victim set of net priority 2048 scores 0.5.
_SCORE_RATE, _SCORE_ORIGIN = 0.0048, 2048.0

JobGroup = tuple[str, str, str]  # namespace, job id, task group


@dataclass(frozen=True)
class PreemptionAsk:
    """What one placement needs on a node."""

    resources: Resources
    static_ports: tuple[int, ...] = ()
    dynamic_ports: int = 0
    cores: tuple[int, ...] = ()  # the whole cores picked on this node


@dataclass(frozen=True)
class PreemptionScope:
    """What a pass that may preempt knows: the evictable work per node, and who is placing."""

    running: Mapping[uuid.UUID, tuple[RunningAllocation, ...]]
    priority: int
    job: tuple[str, str]  # namespace, job id: a job never preempts itself


def eligible(placing_priority: int, victim_priority: int) -> bool:
    return placing_priority - victim_priority >= PRIORITY_DELTA


def job_group(candidate: RunningAllocation) -> JobGroup:
    a = candidate.alloc
    return (a.namespace, a.job_id, a.task_group)


def exhausted_for(node: Node, usage: NodeUsage, ask: PreemptionAsk) -> str | None:
    """The shared fit check plus the dynamic port count: None when the ask fits."""
    dimension = exhausted_dimension(node, usage, ask.resources, ask.static_ports, ask.cores)
    if (
        dimension is None
        and ask.dynamic_ports
        and ask.dynamic_ports > ports.dynamic_free(node, usage, ask.static_ports)
    ):
        return PORTS
    return dimension


def distance(need: Resources, used: Resources) -> float:
    """How far an allocation's resources are from what is needed; 0 is a perfect fit.
    Dimensions the ask does not use count as a perfect fit, as in Nomad."""
    coords = [
        (wanted - held) / wanted
        for wanted, held in ((need.memory_mb, used.memory_mb), (need.cpu, used.cpu), (need.disk_mb, used.disk_mb))
        if wanted > 0
    ]
    return math.sqrt(sum(c * c for c in coords))


def score(need: Resources, candidate: RunningAllocation, already_preempted: int) -> float:
    """Distance plus Nomad's penalty for a job group already losing max_parallel or more."""
    penalty = 0.0
    if candidate.max_parallel > 0 and already_preempted >= candidate.max_parallel:
        penalty = (already_preempted + 1 - candidate.max_parallel) * MAX_PARALLEL_PENALTY
    return distance(need, candidate.alloc.resources) + penalty


def preemption_score(victims: Iterable[RunningAllocation]) -> float:
    """Nomad's node score for a preemption option: lower net priority of the victims is better."""
    priorities = [v.job_priority for v in victims]
    if not priorities:
        return 1.0
    highest = max(priorities)
    net = highest + sum(priorities) / highest if highest > 0 else 0.0
    return 1.0 / (1.0 + math.exp(_SCORE_RATE * (net - _SCORE_ORIGIN)))


class _Fit:
    """Whether the ask fits on the node once a set of victims is gone."""

    def __init__(self, node: Node, usage: NodeUsage, ask: PreemptionAsk) -> None:
        self.node, self.usage, self.ask = node, usage, ask

    def after(self, usage: NodeUsage, victim: RunningAllocation) -> NodeUsage:
        return remove_usage(usage, victim.alloc.resources, victim.alloc.host_ports, victim.alloc.reserved_cores)

    def met(self, victims: Iterable[RunningAllocation]) -> bool:
        usage = self.usage
        for victim in victims:
            usage = self.after(usage, victim)
        return exhausted_for(self.node, usage, self.ask) is None


def candidates_on(
    node: Node, running: Iterable[RunningAllocation], priority: int, job: tuple[str, str]
) -> list[RunningAllocation]:
    """Live allocations of other jobs on the node that the placing job may evict, youngest first
    (among equally good victims the one that has done the least work goes), then by ID."""
    pool = [
        c
        for c in running
        if c.alloc.node_id == node.id
        and not c.alloc.terminal
        and (c.alloc.namespace, c.alloc.job_id) != job
        and eligible(priority, c.job_priority)
    ]
    return sorted(pool, key=lambda c: (-c.alloc.create_index, str(c.alloc.id)))


def select_victims(
    node: Node,
    usage: NodeUsage,
    ask: PreemptionAsk,
    running: Iterable[RunningAllocation],
    *,
    priority: int,
    job: tuple[str, str],
    preempted: Mapping[JobGroup, int] | None = None,
) -> tuple[RunningAllocation, ...] | None:
    """The allocations to evict so that `ask` fits on `node`, or None when no eligible set is
    enough. `usage` is the node's current usage (the plan's own changes included); `preempted`
    counts the evictions the plan already makes per job group, for the max_parallel penalty.
    An ask that already fits needs no victims."""
    fit = _Fit(node, usage, ask)
    if fit.met(()):
        return ()
    pool = candidates_on(node, running, priority, job)
    if not pool or not fit.met(pool):  # evicting everything eligible is not enough
        return None
    chosen = _greedy(pool, fit, Counter(preempted or {}))
    chosen = _nomad_trim(chosen, fit)
    return tuple(_drop_unneeded(chosen, fit))


def _greedy(pool: list[RunningAllocation], fit: _Fit, counts: Counter[JobGroup]) -> list[RunningAllocation]:
    wanted = set(fit.ask.static_ports)
    chosen = [c for c in pool if c.alloc.host_ports & wanted]
    usage, need = fit.usage, fit.ask.resources
    for victim in chosen:
        usage, need = fit.after(usage, victim), need - victim.alloc.resources
        counts[job_group(victim)] += 1
    if exhausted_for(fit.node, usage, fit.ask) is None:
        return chosen
    rest = [c for c in pool if c not in chosen]
    for level in sorted({c.job_priority for c in rest}):
        group = [c for c in rest if c.job_priority == level]
        while group:
            best = min(group, key=lambda c: score(need, c, counts[job_group(c)]))  # first wins ties
            group.remove(best)
            chosen.append(best)
            counts[job_group(best)] += 1
            usage, need = fit.after(usage, best), need - best.alloc.resources
            if exhausted_for(fit.node, usage, fit.ask) is None:
                return chosen
    return chosen


def _nomad_trim(chosen: Sequence[RunningAllocation], fit: _Fit) -> list[RunningAllocation]:
    """Nomad's filterSuperset: farthest from the ask first, keep the shortest sufficient prefix."""
    ordered = sorted(chosen, key=lambda c: distance(fit.ask.resources, c.alloc.resources), reverse=True)
    usage = fit.usage
    for taken, victim in enumerate(ordered, start=1):
        usage = fit.after(usage, victim)
        if exhausted_for(fit.node, usage, fit.ask) is None:
            return ordered[:taken]
    return ordered


def _drop_unneeded(chosen: list[RunningAllocation], fit: _Fit) -> list[RunningAllocation]:
    """Spare whatever is not needed, trying the most valuable (highest priority) work first."""
    kept = list(chosen)
    for victim in sorted(chosen, key=lambda c: -c.job_priority):
        without = [c for c in kept if c is not victim]
        if fit.met(without):
            kept = without
    return kept
