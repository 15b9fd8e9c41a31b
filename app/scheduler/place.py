"""Choosing a node for one placement: Nomad's generic stack. Nodes are walked in the pass's
shuffled order from where the previous selection stopped; each is checked for feasibility,
co-location rules and fit, scored, and the walk stops once enough nodes were scored."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.scheduler import ports
from app.scheduler.cores import all_cores, pick_cores, with_cores
from app.scheduler.feasibility.distinct import DistinctRules, distinct_rules
from app.scheduler.feasibility.feasible import Feasibility
from app.scheduler.fit import CORES, remove_usage
from app.scheduler.metrics import DEFAULT_METRICS, MetricsBuilder, MetricsOptions, NodePool
from app.scheduler.planstate import PlanState
from app.scheduler.preemption import PreemptionAsk, PreemptionScope, exhausted_for, preemption_score, select_victims
from app.scheduler.rank import (
    AffinityScorer,
    SpreadRule,
    anti_affinity,
    fit_score_of,
    spread_rules,
    spread_score,
)
from app.structs import Affinity, AnyMetrics, Job, Node, NodeUsage, Resources, RunningAllocation, TaskGroup

Victims = tuple[RunningAllocation, ...]
# A scored option: the node's final score and the allocations its placement would evict.
Option = tuple[float, Victims]

BATCH_LIMIT = 2
SPREAD_AFFINITY_LIMIT = 100  # Nomad's NodeLimitForFeasibilityChecks
MAX_SKIP = 3  # options scoring <= 0 that may be passed over in favour of later ones
RESCHEDULE_PENALTY = -1.0


@dataclass(frozen=True)
class GroupAsk:
    """Everything about a group the per-node checks need, computed once per pass."""

    group: TaskGroup
    resources: Resources
    static_ports: tuple[int, ...]
    dynamic_ports: int
    distinct: DistinctRules
    affinities: tuple[Affinity, ...]
    spreads: tuple[SpreadRule, ...]
    fit: PreemptionAsk  # resources and ports together, as the fit check takes them
    affinity: AffinityScorer = field(compare=False, repr=False)  # the affinities' scores, cached per class
    cores: tuple[tuple[str, int], ...] = ()  # (task, whole cores) for the tasks asking for cores

    @classmethod
    def of(cls, job: Job, group: TaskGroup) -> GroupAsk:
        task_affinities = tuple(a for t in group.tasks for a in t.affinities)
        static, dynamic = ports.static_ports(group), ports.dynamic_count(group)
        affinities = job.affinities + group.affinities + task_affinities
        return cls(
            group=group,
            resources=group.resources,
            static_ports=static,
            dynamic_ports=dynamic,
            distinct=distinct_rules(job, group),
            affinities=affinities,
            spreads=spread_rules(job.spreads + group.spreads, group.count),
            fit=PreemptionAsk(group.resources, static, dynamic),
            affinity=AffinityScorer(affinities),
            cores=group.core_asks,
        )

    def on(self, node: Node, usage: NodeUsage) -> PreemptionAsk | None:
        """The fit ask on `node`: a group asking for whole cores also needs the CPU they count
        for there, and enough free cores (None when the node has too few)."""
        if not self.cores:
            return self.fit
        picked = pick_cores(node, usage, self.cores)
        if picked is None:
            return None
        fit = self.fit
        return PreemptionAsk(with_cores(fit.resources, picked), fit.static_ports, fit.dynamic_ports, all_cores(picked))


class NodeRanker:
    """Checks and scores one node for one group; shared by the generic and system schedulers."""

    def __init__(
        self,
        state: PlanState,
        feasibility: Feasibility,
        pool: NodePool,
        algorithm: str,
        preemption: PreemptionScope | None = None,
        options: MetricsOptions = DEFAULT_METRICS,
    ) -> None:
        self.state = state
        self.feasibility = feasibility
        self.pool = pool
        self.algorithm = algorithm
        self.preemption = preemption  # None: preemption is disabled for this job's type
        self.options = options

    def metrics(self) -> MetricsBuilder:
        return MetricsBuilder(self.pool, keep_scores=self.options.placements)

    def placed_metrics(self, metrics: MetricsBuilder) -> AnyMetrics | None:
        """What a successful placement carries: its selection's metrics (frozen, or as the
        options' `finish` makes them), unless they are off."""
        options = self.options
        if not options.placements:
            return None
        return metrics.freeze() if options.finish is None else options.finish(metrics)

    def consider(
        self,
        node: Node,
        ask: GroupAsk,
        metrics: MetricsBuilder,
        penalty: frozenset[uuid.UUID],
        anti: bool = True,
        name: str = "",
    ) -> float | None:
        """The node's final score, or None (with the reason recorded) when it cannot take the
        group. `name`: the placement's allocation name (a per_alloc volume's index)."""
        if not self._feasible(node, ask, metrics, name):
            return None
        usage = self.state.usage(node.id)
        fit = ask.on(node, usage)
        if fit is None:
            metrics.exhaust(node, CORES)
            return None
        dimension = exhausted_for(node, usage, fit)
        if dimension is not None:
            metrics.exhaust(node, dimension)
            return None
        return self._score(node, ask, metrics, usage.resources, fit.resources, penalty, anti)

    def consider_preempting(
        self,
        node: Node,
        ask: GroupAsk,
        metrics: MetricsBuilder,
        penalty: frozenset[uuid.UUID],
        anti: bool = True,
        name: str = "",
    ) -> Option | None:
        """Like consider, but a node that is full may still take the group by evicting
        lower-priority work; the option's score then includes Nomad's preemption score."""
        scope = self.preemption
        if scope is None or not self._feasible(node, ask, metrics, name):
            return None
        usage = self.state.usage(node.id)
        fit = ask.on(node, usage)
        if fit is None:  # cores are not preempted for: a node short of them cannot take the group
            metrics.exhaust(node, CORES)
            return None
        running = [r for r in scope.running.get(node.id, ()) if not self.state.is_preempted(r.alloc.id)]
        victims = select_victims(
            node,
            usage,
            fit,
            running,
            priority=scope.priority,
            job=scope.job,
            preempted=self.state.preempted_counts(),
        )
        if victims is None:
            metrics.exhaust(node, exhausted_for(node, usage, fit) or "preemption")
            return None
        for victim in victims:
            usage = remove_usage(usage, victim.alloc.resources, victim.alloc.host_ports, victim.alloc.reserved_cores)
        preempting = preemption_score(victims) if victims else None
        return self._score(node, ask, metrics, usage.resources, fit.resources, penalty, anti, preempting), victims

    def _feasible(self, node: Node, ask: GroupAsk, metrics: MetricsBuilder, name: str) -> bool:
        metrics.evaluated += 1
        group = ask.group
        reason = self.feasibility.check(node, group, name) or ask.distinct.violation(node, group.name, self.state)
        if reason is not None:
            metrics.filter(node, reason)
            return False
        return True

    def _score(
        self,
        node: Node,
        ask: GroupAsk,
        metrics: MetricsBuilder,
        used_before: Resources,
        wanted: Resources,
        penalty: frozenset[uuid.UUID],
        anti: bool,
        preempting: float | None = None,
    ) -> float:
        """The mean of the applicable scores, summed as they come (this runs for every node a
        placement scores: tens of thousands of times in a big batch job's pass). Each part
        goes to the metrics too, which keep the best nodes' (Nomad's ScoreMetaData)."""
        fit = total = fit_score_of(
            node.allocatable,  # made once per node object
            used_before.cpu + wanted.cpu,
            used_before.memory_mb + wanted.memory_mb,
            self.algorithm,
        )
        count = 1
        collision = penalised = affinity = spread = None
        if preempting is not None:
            total += preempting
            count += 1
        if anti:
            collision = anti_affinity(self.state.count_on(node.id, ask.group.name), ask.group.count)
            if collision is not None:
                total += collision
                count += 1
        if penalty and node.id in penalty:
            penalised = RESCHEDULE_PENALTY
            total += penalised
            count += 1
        if ask.affinities:
            affinity = ask.affinity.score(node)
            if affinity is not None:
                total += affinity
                count += 1
        if ask.spreads:
            group = ask.group.name
            spread = spread_score(ask.spreads, node, lambda target: self.state.property_counts(target, group))
            if spread is not None:
                total += spread
                count += 1
        final = total / count
        if metrics.top is not None:
            # As Nomad's, the generic stack's scorers report 0 where they did not apply; a
            # system job's node has only the scores that applied.
            metrics.scored(
                node,
                final,
                (
                    fit,
                    (collision or 0.0) if anti else None,
                    (penalised or 0.0) if anti else None,
                    (affinity or 0.0) if anti or affinity is not None else None,
                    (spread or 0.0) if ask.spreads else None,
                    preempting,
                ),
            )
        return final


def score_limit(ask: GroupAsk, batch: bool, candidates: int) -> int:
    """How many nodes that can take the group are scored before picking the best."""
    if ask.affinities or ask.spreads:
        return max(ask.group.count, SPREAD_AFFINITY_LIMIT)
    if batch or candidates <= 0:
        return BATCH_LIMIT
    return max(BATCH_LIMIT, math.ceil(math.log2(candidates)))


class Stack:
    """Walks the shuffled candidate list lazily; the cursor persists between selections,
    so consecutive placements start at different nodes and each costs O(limit) when nodes fit."""

    def __init__(self, nodes: Sequence[Node], ranker: NodeRanker, batch: bool) -> None:
        self._nodes = nodes
        self._ranker = self.ranker = ranker
        self._batch = batch
        self._cursor = 0

    def select(
        self, ask: GroupAsk, penalty: frozenset[uuid.UUID] = frozenset(), name: str = ""
    ) -> tuple[Node | None, MetricsBuilder]:
        """The best node (None: none fits) and the selection's metrics, timed by the pass's clock.
        `name`: the new allocation's name (a per_alloc volume's index)."""
        clock = self._ranker.options.clock
        began = clock()
        metrics = self._ranker.metrics()

        def rank(node: Node) -> Option | None:
            score = self._ranker.consider(node, ask, metrics, penalty, name=name)
            return None if score is None else (score, ())

        best = self._best(ask, rank)
        metrics.elapsed_ns = clock() - began
        return (best[0] if best else None), metrics

    def select_preempting(
        self, ask: GroupAsk, penalty: frozenset[uuid.UUID] = frozenset(), name: str = ""
    ) -> tuple[Node, Victims, MetricsBuilder] | None:
        """Nomad's second try when nothing fits and preemption is enabled for the job's type.
        Its metrics go with the allocation it places; a failure is reported with the first
        try's reasons."""
        clock = self._ranker.options.clock
        began = clock()
        metrics = self._ranker.metrics()
        best = self._best(ask, lambda node: self._ranker.consider_preempting(node, ask, metrics, penalty, name=name))
        metrics.elapsed_ns = clock() - began
        return None if best is None else (best[0], best[1], metrics)

    def _best(self, ask: GroupAsk, rank: Callable[[Node], Option | None]) -> tuple[Node, Victims] | None:
        """One lap at most over the nodes from the cursor, which advances past every node read
        (an index loop, not a generator: this is the innermost loop of a big batch job's pass)."""
        nodes, size = self._nodes, len(self._nodes)
        limit = score_limit(ask, self._batch, size)
        best: tuple[float, Node, Victims] | None = None
        taken = 0
        skipped: list[tuple[float, Node, Victims]] = []
        for _ in range(size):
            node = nodes[self._cursor]
            self._cursor = self._cursor + 1 if self._cursor + 1 < size else 0
            option = rank(node)
            if option is None:
                continue
            score, victims = option
            if score <= 0 and len(skipped) < MAX_SKIP:
                skipped.append((score, node, victims))
                continue
            taken += 1
            if best is None or score > best[0]:
                best = (score, node, victims)
            if taken >= limit:
                break
        for fallback in skipped[: max(0, limit - taken)]:  # fall back to the passed-over options
            if best is None or fallback[0] > best[0]:
                best = fallback
        return (best[1], best[2]) if best else None
