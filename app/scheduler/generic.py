"""The service and batch scheduler: reconcile each group, then stop, update in place, and
place through the stack."""

from __future__ import annotations

from dataclasses import replace

from app.scheduler.context import Pass
from app.scheduler.feasible import in_job_scope
from app.scheduler.place import GroupAsk, Stack, Victims
from app.scheduler.reconcile import GroupChanges, Placement, ReconcileContext, reconcile_group
from app.scheduler.reschedule import next_tracker
from app.structs import Allocation, Evaluation, Job, SchedulerResult, Snapshot


def schedule(evaluation: Evaluation, snapshot: Snapshot, now_ns: int) -> SchedulerResult:
    run = Pass(evaluation, snapshot, now_ns)
    by_group = run.stop_unwanted()
    job = snapshot.job
    if by_group is None or job is None:
        return run.result(job)
    candidates = run.candidates(job)
    ranker = run.ranker(job, candidates)
    ctx = _context(run, job, evaluation.type == "batch")
    changes = {g.name: reconcile_group(g, by_group.get(g.name, ()), ctx) for g in job.task_groups}
    for change in changes.values():
        run.apply_stops(change.stops)
    for group in job.task_groups:
        _update_in_place(run, job, changes[group.name])
    stack = Stack(candidates, ranker, batch=evaluation.type == "batch")
    for group in job.task_groups:
        ask = GroupAsk.of(job, group)
        for placement in changes[group.name].placements:
            _place(run, stack, job, ask, placement)
    return run.result(job)


def _context(run: Pass, job: Job, batch: bool) -> ReconcileContext:
    feasibility = run.feasibility
    assert feasibility is not None

    def node_accepts(alloc: Allocation) -> bool:
        node = run.nodes.get(alloc.node_id)
        group = job.group(alloc.task_group)
        return (
            node is not None
            and group is not None
            and in_job_scope(node, job)
            and feasibility.check(node, group) is None
        )

    return ReconcileContext(run.nodes, batch, run.now_ns, job, run.snapshot.job_versions, node_accepts)


def _update_in_place(run: Pass, job: Job, changes: GroupChanges) -> None:
    for alloc in changes.inplace:
        group = job.group(alloc.task_group)
        assert group is not None
        run.state.update_in_place(
            replace(alloc, job_version=job.version, eval_id=run.evaluation.id, resources=group.resources)
        )


def _place(run: Pass, stack: Stack, job: Job, ask: GroupAsk, placement: Placement) -> None:
    group, previous = ask.group, placement.previous
    if group.name in run.failures:  # Nomad stops trying a group after its first failure
        run.failures.coalesce(group.name)
        run.queued[group.name] += 1
        return
    if previous is not None and placement.stop_previous:
        run.state.stop(previous, placement.stop_previous)
    penalty = frozenset({previous.node_id}) if previous is not None and placement.reschedule else frozenset()
    node, metrics = stack.select(ask, penalty)
    victims: Victims = ()
    if node is None:
        option = stack.select_preempting(ask, penalty)
        if option is None:
            if previous is not None and placement.stop_previous:
                run.state.unstop(previous)
            run.failures.record(group.name, metrics)
            run.queued[group.name] += 1
            return
        node, victims = option
    tracker = next_tracker(previous, run.now_ns) if previous is not None and placement.reschedule else None
    run.state.place(run.build(job, group, placement.name, node, previous, tracker, victims))
