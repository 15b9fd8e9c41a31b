"""The service and batch scheduler: reconcile each group, then stop, update in place, and
place through the stack. A big plan may be streamed: the placements are yielded in chunks as
the pass goes, so the worker submits each while the pass makes the next (see `stream`)."""

from __future__ import annotations

import uuid
from collections.abc import Generator
from dataclasses import replace

from app.scheduler.context import Pass
from app.scheduler.cores import with_cores
from app.scheduler.deployments import DeploymentTracker
from app.scheduler.feasibility.feasible import in_job_scope
from app.scheduler.metrics import DEFAULT_METRICS, MetricsOptions
from app.scheduler.place import GroupAsk, Stack, Victims
from app.scheduler.reconcile import GroupChanges, Placement, ReconcileContext, reconcile_group
from app.scheduler.reschedule import next_tracker
from app.structs import Allocation, Evaluation, Job, Plan, SchedulerResult, Snapshot


def schedule(
    evaluation: Evaluation, snapshot: Snapshot, now_ns: int, metrics: MetricsOptions = DEFAULT_METRICS
) -> SchedulerResult:
    """The whole plan at once."""
    try:
        next(stream(evaluation, snapshot, now_ns, chunk_placements=0, metrics=metrics))  # yields nothing unchunked
    except StopIteration as done:
        result: SchedulerResult = done.value
        return result
    raise AssertionError("an unchunked pass yielded a chunk")


def stream(
    evaluation: Evaluation,
    snapshot: Snapshot,
    now_ns: int,
    chunk_placements: int,
    metrics: MetricsOptions = DEFAULT_METRICS,
) -> Generator[Plan, None, SchedulerResult]:
    """The pass, yielding a plan of its fresh placements each time `chunk_placements` (0: never)
    have been made, and returning the result with the rest. The chunks and the final plan
    together are exactly what `schedule` returns for the same input.

    Only a plan that may be applied in parts is chunked: not all_at_once (that one must apply
    whole or not at all), no deployment (its state goes with the placements that make it), and
    nothing but fresh placements before the chunk (stops, evictions and in-place updates stay
    in one plan with the placements they make room for). Once one of those appears, the rest
    of the pass goes into the final plan."""
    run = Pass(evaluation, snapshot, now_ns, metrics)
    # Batch jobs have no update block, so they never create a deployment; a stopped or
    # purged job still cancels the one it had.
    tracker = DeploymentTracker(snapshot.job, snapshot.deployment, now_ns, run.ids.next)
    by_group = run.stop_unwanted()
    job = snapshot.job
    if by_group is None or job is None:
        return _with_deployment(run.result(job), tracker)
    candidates = run.candidates(job)
    ranker = run.ranker(job)
    ctx = _context(run, job, evaluation.type == "batch", tracker)
    changes = {g.name: reconcile_group(g, by_group.get(g.name, ()), ctx) for g in job.task_groups}
    for change in changes.values():
        run.apply_stops(change.stops)
    for group in job.task_groups:
        _update_in_place(run, job, changes[group.name], _deployment_of(tracker, group.name))
    stack = Stack(candidates, ranker, batch=evaluation.type == "batch")
    chunked = chunk_placements > 0 and not job.all_at_once and tracker.current is None and not tracker.updates
    for group in job.task_groups:
        ask = GroupAsk.of(job, group)
        deployment_id = _deployment_of(tracker, group.name)
        for placement in changes[group.name].placements:
            _place(run, stack, job, ask, placement, deployment_id)
            if chunked and run.state.placed_count >= chunk_placements and run.state.only_placements:
                yield run.chunk(job)
    return _with_deployment(run.result(job), tracker)


def _deployment_of(tracker: DeploymentTracker, group: str) -> uuid.UUID | None:
    """New and updated allocations of a group that rolls out join the current deployment."""
    return tracker.deployment_id if group in tracker.groups else None


def _with_deployment(result: SchedulerResult, tracker: DeploymentTracker) -> SchedulerResult:
    deployment, updates = tracker.plan_parts()
    return replace(result, plan=replace(result.plan, deployment=deployment, deployment_updates=updates))


def _context(run: Pass, job: Job, batch: bool, tracker: DeploymentTracker) -> ReconcileContext:
    feasibility = run.feasibility
    assert feasibility is not None

    def node_accepts(alloc: Allocation) -> bool:
        node = run.nodes.get(alloc.node_id)
        group = job.group(alloc.task_group)
        return (
            node is not None
            and group is not None
            and in_job_scope(node, job)
            and feasibility.check(node, group, alloc.name) is None
        )

    return ReconcileContext(run.nodes, batch, run.now_ns, job, run.snapshot.job_versions, node_accepts, tracker)


def _update_in_place(run: Pass, job: Job, changes: GroupChanges, deployment_id: uuid.UUID | None) -> None:
    for alloc in changes.inplace:
        group = job.group(alloc.task_group)
        assert group is not None
        resources = with_cores(group.resources, alloc.task_cores)  # the cores stay: changing them is destructive
        updated = replace(alloc, job_version=job.version, eval_id=run.evaluation.id, resources=resources)
        if deployment_id is not None:  # it joins the deployment, and its health is judged again
            updated = replace(updated, deployment_id=deployment_id, healthy=None)
        run.state.update_in_place(updated)


def _place(
    run: Pass, stack: Stack, job: Job, ask: GroupAsk, placement: Placement, deployment_id: uuid.UUID | None
) -> None:
    group, previous = ask.group, placement.previous
    if group.name in run.failures:  # Nomad stops trying a group after its first failure
        run.failures.coalesce(group.name)
        run.queued[group.name] += 1
        return
    if previous is not None and placement.stop_previous:
        run.state.stop(previous, placement.stop_previous)
    penalty = frozenset({previous.node_id}) if previous is not None and placement.reschedule else frozenset()
    node, metrics = stack.select(ask, penalty, placement.name)
    victims: Victims = ()
    if node is None:
        option = stack.select_preempting(ask, penalty, placement.name)
        if option is None:
            if previous is not None and placement.stop_previous:
                run.state.unstop(previous)
            run.failures.record(group.name, metrics)
            run.queued[group.name] += 1
            return
        first = metrics.elapsed_ns
        node, victims, metrics = option
        metrics.elapsed_ns += first  # the allocation's time is both tries'
    tracker = next_tracker(previous, run.now_ns) if previous is not None and placement.reschedule else None
    placed = stack.ranker.placed_metrics(metrics)  # before build: its evictions change the scores' inputs
    alloc = run.build(job, group, placement.name, node, previous, tracker, victims, placed)
    if deployment_id is not None or placement.canary:  # replace() costs more than the rest of a placement's build
        alloc = replace(alloc, deployment_id=deployment_id, canary=placement.canary)
    run.state.place(alloc)
