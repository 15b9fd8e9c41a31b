"""What one scheduling pass shares: the seeded randomness, node lookups, the plan being
built, feasibility caches, and the result assembly common to both schedulers."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from app.scheduler import ports, reasons
from app.scheduler.allocs import new_allocation
from app.scheduler.cores import pick_cores
from app.scheduler.feasibility.feasible import Feasibility, JobScope, in_pool
from app.scheduler.feasibility.sticky import NO_CLAIMS, StickyVolumes
from app.scheduler.metrics import DEFAULT_METRICS, Failures, MetricsOptions, NodePool
from app.scheduler.place import NodeRanker
from app.scheduler.planstate import PlanState
from app.scheduler.preemption import PreemptionScope
from app.scheduler.reconcile import Stop, stop_all
from app.scheduler.shuffle import NODE_ORDER, PORTS, IdSource, LazyShuffle, Rng, id_seed, seed_for
from app.structs import (
    Allocation,
    AnyMetrics,
    Evaluation,
    Job,
    Node,
    Plan,
    RunningAllocation,
    SchedulerResult,
    Snapshot,
    TaskGroup,
)
from app.wire.allocation import RescheduleTrackerJson


class Pass:
    def __init__(
        self, evaluation: Evaluation, snapshot: Snapshot, now_ns: int, metrics: MetricsOptions = DEFAULT_METRICS
    ) -> None:
        self.evaluation = evaluation
        self.metrics = metrics
        self.snapshot = snapshot
        self.now_ns = now_ns
        self.seed = seed_for(evaluation.id, snapshot.index)
        self.ids = IdSource(id_seed(self.seed, now_ns), _existing_ids(snapshot))
        self.port_rng = Rng(self.seed, PORTS)
        self.nodes = snapshot.node_set.by_id  # built once per NodeSet, shared by every pass on it
        self.state = PlanState(snapshot.usage, (a for a in snapshot.allocations if not a.terminal), self.nodes)
        self.failures = Failures()
        self.queued: Counter[str] = Counter()
        self.blocked_nodes: set[uuid.UUID] = set()  # system jobs: nodes too full to place on
        self.feasibility: Feasibility | None = None

    def ordered_nodes(self, nodes: Iterable[Node]) -> LazyShuffle[Node]:
        """`nodes` come from snapshot.nodes (a NodeSet, already in canonical order) in that order,
        filtered at most; so the input order never matters and nothing is sorted per pass. They
        are shuffled by the pass seed as far as the placement walk reads."""
        return LazyShuffle(list(nodes), Rng(self.seed, NODE_ORDER))

    def ranker(self, job: Job) -> NodeRanker:
        claims = self.snapshot.volume_claims  # almost always none: then nothing is built per pass
        known = {a.id for a in self.snapshot.allocations} if claims else set()
        sticky = StickyVolumes(claims, known, self.state.count_on) if claims else NO_CLAIMS
        self.feasibility = Feasibility(job, sticky)
        return NodeRanker(
            self.state,
            self.feasibility,
            self._pool(job),
            self.snapshot.config.algorithm,
            self.preemption(job),
            self.metrics,
        )

    def _pool(self, job: Job) -> NodePool:
        """The metrics' node counts: the same for every job of the same scope on these nodes."""
        nodes = self.snapshot.node_set

        def count() -> NodePool:
            return NodePool(sum(1 for n in nodes if in_pool(n, job.node_pool)), self._placeable(job))

        return nodes.derived(("pool", tuple(job.datacenters), job.node_pool), count)

    def _placeable(self, job: Job) -> tuple[Node, ...]:
        """Nodes that may receive the job's new allocations: ready, eligible, not draining, in
        its datacenters and pool; in canonical order, found once per node set and scope."""
        nodes = self.snapshot.node_set

        def scan() -> tuple[Node, ...]:
            in_scope = JobScope(job)
            return tuple(n for n in nodes if n.ready_for_placement and in_scope(n))

        return nodes.derived(("placeable", tuple(job.datacenters), job.node_pool), scan)

    def preemption(self, job: Job) -> PreemptionScope | None:
        """Read per pass, so a configuration change applies from the next evaluation on."""
        if not self.snapshot.config.preemption_enabled(job.type):
            return None
        return PreemptionScope(self.snapshot.preemptible, job.priority, (job.namespace, job.id))

    def candidates(self, job: Job) -> LazyShuffle[Node]:
        """The placeable nodes, shuffled by the pass seed as far as the placement walk reads."""
        return self.ordered_nodes(self._placeable(job))

    def apply_stops(self, stops: Iterable[Stop]) -> None:
        for stop in stops:
            self.state.stop(stop.alloc, stop.description, stop.client_status)

    def stop_unwanted(self) -> dict[str, list[Allocation]] | None:
        """Stop what the job no longer wants, the same for every scheduler type: everything when
        the job is missing or stopped (then None), else the allocations of removed groups.
        A periodic or parameterized parent places nothing either: its children do the work.
        Returns the job's allocations by group."""
        job = self.snapshot.job
        if job is None or job.stop or job.launches_children:
            reason = reasons.JOB_MISSING if job is None else reasons.JOB_STOPPED if job.stop else reasons.LAUNCHER
            self.apply_stops(stop_all(self.snapshot.allocations, self.nodes, reason))
            return None
        by_group: dict[str, list[Allocation]] = defaultdict(list)
        for alloc in self.snapshot.allocations:
            by_group[alloc.task_group].append(alloc)
        for name, allocs in sorted(by_group.items()):
            if job.group(name) is None:  # the group was removed from the job
                self.apply_stops(stop_all(allocs, self.nodes, reasons.NOT_NEEDED))
        return by_group

    def build(
        self,
        job: Job,
        group: TaskGroup,
        name: str,
        node: Node,
        previous: Allocation | None = None,
        tracker: RescheduleTrackerJson | None = None,
        victims: tuple[RunningAllocation, ...] = (),
        metrics: AnyMetrics | None = None,
    ) -> Allocation:
        """A new allocation on `node`; its victims are evicted first, so it may use their ports."""
        alloc_id = self.ids.next()
        if victims:
            self.state.preempt(victims, alloc_id)
        usage = self.state.usage(node.id)
        # The ranker found the cores free on this usage; none found would be a bug, not a crash.
        task_cores = pick_cores(node, usage, group.core_asks) or () if group.core_asks else ()
        return new_allocation(
            alloc_id=alloc_id,
            job=job,
            group=group,
            name=name,
            node=node,
            eval_id=self.evaluation.id,
            ports=ports.assign(group, node, usage, self.port_rng),
            previous=previous,
            reschedule_tracker=tracker,
            preempted=tuple(v.alloc.id for v in victims),
            metrics=metrics,
            task_cores=task_cores,
        )

    def chunk(self, job: Job) -> Plan:
        """The placements made since the last chunk, as a plan of their own (PlanState.take_placements)."""
        return Plan(
            eval_id=self.evaluation.id,
            priority=job.priority,
            snapshot_index=self.snapshot.index,
            node_allocation=self.state.take_placements(),
        )

    def result(self, job: Job | None) -> SchedulerResult:
        priority = job.priority if job else self.evaluation.priority
        plan = self.state.plan(self.evaluation.id, priority, self.snapshot.index, bool(job and job.all_at_once))
        queued = {g.name: self.queued[g.name] for g in job.task_groups} if job else {}
        feasibility = self.feasibility
        return SchedulerResult(
            plan=plan,
            failed_tg_allocs=self.failures.result(),
            queued_allocations=queued,
            class_eligibility=feasibility.class_eligibility() if feasibility else {},
            escaped_computed_class=feasibility.escaped if feasibility else False,
            blocked_nodes=frozenset(self.blocked_nodes),
        )


def _existing_ids(snapshot: Snapshot) -> Iterator[uuid.UUID]:
    """The IDs a new allocation or deployment must not take: the job's allocations (the earlier
    passes' placements among them) and its deployment."""
    yield from (a.id for a in snapshot.allocations)
    if snapshot.deployment is not None:
        yield snapshot.deployment.id
