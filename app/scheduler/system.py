"""The system and sysbatch scheduler: one allocation of each group on every ready node in
the job's datacenters and pool that passes its constraints. No ranking across nodes: each
node is checked on its own, and only a node that cannot fit the group counts as a failure."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.scheduler import reasons
from app.scheduler.allocs import alloc_name
from app.scheduler.context import Pass
from app.scheduler.cores import with_cores
from app.scheduler.feasibility.feasible import in_job_scope
from app.scheduler.metrics import DEFAULT_METRICS, MetricsOptions
from app.scheduler.place import GroupAsk, NodeRanker, Victims
from app.scheduler.reconcile import LOST_NODE_STATUSES, Stop, node_lost, stop_all
from app.scheduler.updates import destructive
from app.structs import Allocation, Evaluation, Job, Node, SchedulerResult, Snapshot, TaskGroup

SYSTEM_INDEX = 0  # every system allocation is "<job>.<group>[0]"


def schedule(
    evaluation: Evaluation, snapshot: Snapshot, now_ns: int, metrics: MetricsOptions = DEFAULT_METRICS
) -> SchedulerResult:
    run = Pass(evaluation, snapshot, now_ns, metrics)
    by_group = run.stop_unwanted()
    job = snapshot.job
    if by_group is None or job is None:
        return run.result(job)
    nodes = run.ordered_nodes(snapshot.nodes)
    ranker = run.ranker(job)
    rolling = RollingLimit.of(job)
    for group in job.task_groups:
        scope = _GroupScope(run, ranker, job, GroupAsk.of(job, group), evaluation.type == "sysbatch", rolling)
        _schedule_group(scope, nodes, by_group.get(group.name, []))
    result = run.result(job)
    return replace(result, rolling_wait_ns=rolling.stagger_ns) if rolling.reached else result


@dataclass
class RollingLimit:
    """Nomad's rolling system update: with an update block whose max_parallel and stagger are
    set, at most max_parallel destructive updates per pass; the rest wait for a `rolling-update`
    evaluation `stagger` later."""

    remaining: int | None
    stagger_ns: int = 0
    reached: bool = False

    @classmethod
    def of(cls, job: Job) -> RollingLimit:
        update = next((g.update for g in job.task_groups if g.update is not None), None)
        if job.stop or update is None or update.max_parallel <= 0 or update.stagger_ns <= 0:
            return cls(None)
        return cls(update.max_parallel, update.stagger_ns)

    def take(self) -> bool:
        """Whether one more destructive update may go in this pass."""
        if self.remaining is None:
            return True
        if self.remaining == 0:
            self.reached = True
            return False
        self.remaining -= 1
        return True


@dataclass(frozen=True)
class _GroupScope:
    run: Pass
    ranker: NodeRanker
    job: Job
    ask: GroupAsk
    sysbatch: bool
    rolling: RollingLimit

    @property
    def group(self) -> TaskGroup:
        return self.ask.group


def _schedule_group(scope: _GroupScope, nodes: Sequence[Node], allocs: list[Allocation]) -> None:
    run = scope.run
    # Lost allocations are not replaced elsewhere: the group runs once per node.
    run.apply_stops(stop_all((a for a in allocs if node_lost(a, run.nodes)), run.nodes, reasons.LOST))
    by_node: dict[uuid.UUID, list[Allocation]] = defaultdict(list)
    for alloc in allocs:
        by_node[alloc.node_id].append(alloc)
    for node in nodes:
        if node.status not in LOST_NODE_STATUSES:
            _schedule_node(scope, node, by_node.get(node.id, []))


def _schedule_node(scope: _GroupScope, node: Node, allocs: list[Allocation]) -> None:
    run = scope.run
    live = sorted((a for a in allocs if not a.terminal), key=lambda a: (a.create_index, str(a.id)))
    if not in_job_scope(node, scope.job):
        run.apply_stops(Stop(a, reasons.NODE_TAINTED) for a in live)
        return
    run.apply_stops(Stop(a, reasons.MIGRATING) for a in live if a.desired_transition.get("Migrate"))
    live = [a for a in live if not a.desired_transition.get("Migrate")]
    if not node.ready_for_placement:
        return  # ineligible, draining or initializing: keep what runs, add nothing
    assert run.feasibility is not None
    if run.feasibility.check(node, scope.group) is not None:
        run.apply_stops(Stop(a, reasons.NODE_INFEASIBLE) for a in live)
        return
    run.apply_stops(Stop(a, reasons.NOT_NEEDED) for a in live[1:])  # one per node
    if live:
        _update(scope, node, live[0])
    elif not _finished(scope, allocs):
        _place_on(scope, node, _previous(allocs), None)


def _changed_destructively(scope: _GroupScope, alloc: Allocation) -> bool:
    if alloc.job_version == scope.job.version:
        return False
    old_job = scope.run.snapshot.job_versions.get(alloc.job_version)
    old_group = old_job.group(scope.group.name) if old_job else None
    return old_group is None or destructive(old_group, scope.group)


def _update(scope: _GroupScope, node: Node, alloc: Allocation) -> None:
    run = scope.run
    if alloc.job_version == scope.job.version:
        return
    if not _changed_destructively(scope, alloc):
        run.state.update_in_place(
            replace(
                alloc,
                job_version=scope.job.version,
                eval_id=run.evaluation.id,
                resources=with_cores(scope.group.resources, alloc.task_cores),
            )
        )
        return
    if scope.rolling.take():
        _place_on(scope, node, alloc, reasons.UPDATING)


def _finished(scope: _GroupScope, allocs: list[Allocation]) -> bool:
    """sysbatch work that completed is not run again, unless the job changed what runs."""
    return scope.sysbatch and any(
        a.client_status == "complete" and not _changed_destructively(scope, a) for a in allocs
    )


def _previous(allocs: list[Allocation]) -> Allocation | None:
    """The failed allocation a new one replaces, if any, for the previous_allocation link."""
    replaced = {a.previous_allocation for a in allocs}
    failed = [a for a in allocs if a.client_status == "failed" and a.id not in replaced]
    return max(failed, key=lambda a: (a.create_index, str(a.id)), default=None)


def _place_on(scope: _GroupScope, node: Node, previous: Allocation | None, stop_previous: str | None) -> None:
    run, group = scope.run, scope.group
    if stop_previous is not None and previous is not None:
        run.state.stop(previous, stop_previous)
    ranker = scope.ranker
    clock = ranker.options.clock
    began = clock()
    metrics = ranker.metrics()
    victims: Victims = ()
    if ranker.consider(node, scope.ask, metrics, frozenset(), anti=False) is None:
        option = None
        if metrics.exhausted:  # a full node may still take the group by evicting lower-priority work
            preempting = ranker.metrics()
            option = ranker.consider_preempting(node, scope.ask, preempting, frozenset(), anti=False)
            if option is not None:  # the allocation carries the try that placed it
                metrics = preempting
        if option is None:
            if stop_previous is not None and previous is not None:
                run.state.unstop(previous)
            if metrics.exhausted:  # filtered nodes simply do not run the group; exhausted ones are failures
                run.failures.record(group.name, metrics)
                run.queued[group.name] += 1
                run.blocked_nodes.add(node.id)
            return
        victims = option[1]
    metrics.elapsed_ns = clock() - began
    name = alloc_name(scope.job, group, SYSTEM_INDEX)
    placed = ranker.placed_metrics(metrics)
    run.state.place(run.build(scope.job, group, name, node, previous, victims=victims, metrics=placed))
