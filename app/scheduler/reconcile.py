"""Generic (service/batch) reconciliation of one task group: what to stop, update in place,
and place, from the group's existing allocations. Pure decisions; no node selection."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from app.scheduler import reasons
from app.scheduler.allocs import alloc_name, free_indexes, index_of
from app.scheduler.deployments import DeploymentTracker, GroupRollout, destructive_allowance, healthy_count
from app.scheduler.reschedule import attempts_left, due
from app.scheduler.updates import destructive
from app.structs import Allocation, Job, Node, TaskGroup
from app.wire.allocation import AllocClientStatus

LOST_NODE_STATUSES = ("down", "disconnected")


@dataclass(frozen=True)
class Stop:
    alloc: Allocation
    description: str
    client_status: AllocClientStatus | None = None


@dataclass(frozen=True)
class Placement:
    name: str
    previous: Allocation | None = None
    # Set for replacements whose old allocation should stop only once the new one is placed
    # (destructive updates, reschedules): if placement fails, the old one keeps its place.
    stop_previous: str | None = None
    reschedule: bool = False
    canary: bool = False


@dataclass
class GroupChanges:
    stops: list[Stop] = field(default_factory=list)
    inplace: list[Allocation] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)


@dataclass(frozen=True)
class ReconcileContext:
    nodes: Mapping[uuid.UUID, Node]
    batch: bool
    now_ns: int
    job: Job
    old_jobs: Mapping[int, Job]
    # Whether an allocation's node still accepts the group (datacenter, pool, constraints):
    # if not, even a non-destructive change becomes destructive.
    node_accepts: Callable[[Allocation], bool]
    # The job's deployment through this pass; None where deployments do not apply.
    deployment: DeploymentTracker | None = None


def node_lost(alloc: Allocation, nodes: Mapping[uuid.UUID, Node]) -> bool:
    node = nodes.get(alloc.node_id)
    return node is None or node.status in LOST_NODE_STATUSES


def stop_all(allocs: Iterable[Allocation], nodes: Mapping[uuid.UUID, Node], description: str) -> list[Stop]:
    """Stop every live allocation; the ones on down or missing nodes are also marked lost."""
    return [
        Stop(a, reasons.LOST, "lost") if node_lost(a, nodes) else Stop(a, description) for a in allocs if not a.terminal
    ]


@dataclass
class _Classes:
    untainted: list[Allocation] = field(default_factory=list)
    lost: list[Allocation] = field(default_factory=list)
    migrate: list[Allocation] = field(default_factory=list)
    reschedule: list[Allocation] = field(default_factory=list)
    # Running but unhealthy in its deployment, and marked by the deployment watcher for replacement.
    unhealthy: list[Allocation] = field(default_factory=list)
    # `unknown` on a disconnected node: replaced now (disconnecting) or kept waiting (no replace).
    disconnecting: list[Allocation] = field(default_factory=list)
    waiting: list[Allocation] = field(default_factory=list)
    # Original or replacement, whichever `disconnect.reconcile` drops now that the node is back.
    reconnected: list[Allocation] = field(default_factory=list)

    def slots(self) -> list[Allocation]:
        """Every allocation that currently holds one of the group's `count` slots."""
        return (
            self.lost
            + self.reschedule
            + self.unhealthy
            + self.migrate
            + self.disconnecting
            + self.waiting
            + self.untainted
        )


def reconcile_group(group: TaskGroup, allocs: Iterable[Allocation], ctx: ReconcileContext) -> GroupChanges:
    allocs = list(allocs)
    tracker = ctx.deployment
    rollout = tracker.rollout(group, allocs) if tracker else None
    changes = GroupChanges()
    allocs = _without_canaries(allocs, tracker, rollout, changes)
    classes = _classify(group, allocs, ctx)
    dropped = _stop_surplus(classes, group.count, changes, ctx.job.version)
    for alloc in classes.lost:
        if alloc.id not in dropped:
            changes.stops.append(Stop(alloc, reasons.LOST, "lost"))
            changes.placements.append(Placement(alloc.name, alloc))
    for alloc in classes.migrate:
        if alloc.id not in dropped:
            changes.stops.append(Stop(alloc, reasons.MIGRATING))
            changes.placements.append(Placement(alloc.name, alloc))
    for alloc in classes.reschedule:
        if alloc.id not in dropped:
            changes.placements.append(Placement(alloc.name, alloc, reasons.RESCHEDULED, reschedule=True))
    for alloc in classes.unhealthy:
        if alloc.id not in dropped:
            changes.placements.append(Placement(alloc.name, alloc, reasons.UNHEALTHY, reschedule=True))
    for alloc in classes.disconnecting:
        if alloc.id not in dropped:
            changes.placements.append(Placement(alloc.name, alloc))  # the original stays, unknown
    changes.stops.extend(Stop(alloc, reasons.RECONNECTED) for alloc in classes.reconnected)
    kept = [a for a in classes.untainted if a.id not in dropped]
    rolling = _updates(group, kept, ctx, changes)
    _fill(group, [a for a in classes.slots() if a.id not in dropped], ctx, changes)
    if tracker is None or rollout is None:
        changes.placements.extend(Placement(a.name, a, reasons.UPDATING) for a in sorted(rolling, key=index_of))
        return changes
    _roll_out(group, allocs, kept, rolling, classes, ctx, tracker, rollout, changes)
    return changes


def _without_canaries(
    allocs: list[Allocation], tracker: DeploymentTracker | None, rollout: GroupRollout | None, changes: GroupChanges
) -> list[Allocation]:
    """Unpromoted canaries of a deployment that is no longer current (or failed) are stopped;
    while the current one canaries, its canaries stand beside the group's count."""
    current = tracker.deployment_id if tracker else None
    failed = tracker is not None and tracker.failed
    unneeded = {a.id for a in allocs if a.canary and not a.terminal and (a.deployment_id != current or failed)}
    changes.stops.extend(Stop(a, reasons.CANARY_NOT_NEEDED) for a in allocs if a.id in unneeded)
    held = {a.id for a in rollout.canaries} if rollout is not None and rollout.canarying else set()
    return [a for a in allocs if a.id not in unneeded and a.id not in held]


def _roll_out(
    group: TaskGroup,
    allocs: list[Allocation],
    kept: list[Allocation],
    rolling: list[Allocation],
    classes: _Classes,
    ctx: ReconcileContext,
    tracker: DeploymentTracker,
    rollout: GroupRollout,
    changes: GroupChanges,
) -> None:
    """Canaries first, then destructive updates max_parallel at a time, gated by the health of
    what this deployment already placed; then the deployment's own bookkeeping."""
    state = rollout.state
    update = group.update
    wants_canaries = (
        update is not None
        and update.canary > 0
        and bool(rolling)
        and len(rollout.canaries) < update.canary
        and not state.promoted
    )
    if wants_canaries:
        assert update is not None
        state = replace(state, desired_canaries=update.canary)
        if not tracker.paused and not tracker.failed:
            _place_canaries(group, rolling, rollout, update.canary - len(rollout.canaries), ctx, changes)
    rollout = replace(rollout, state=state)
    pending = len(rolling) + len(classes.migrate)
    allowance = destructive_allowance(group, tracker, rollout, kept, pending)
    if not (tracker.paused or tracker.failed or rollout.canarying):
        for alloc in sorted(rolling, key=index_of)[:allowance]:
            changes.placements.append(Placement(alloc.name, alloc, reasons.UPDATING))
    if rollout.existing:
        tracker.set_group(group.name, state)
    else:
        had_running = any(a.job_version == ctx.job.version for a in allocs)
        tracker.start(group, rollout, had_running, bool(rolling or changes.inplace))
    _judge_completion(group, rolling, classes, tracker, wants_canaries, allocs, changes)


def _place_canaries(
    group: TaskGroup,
    rolling: list[Allocation],
    rollout: GroupRollout,
    missing: int,
    ctx: ReconcileContext,
    changes: GroupChanges,
) -> None:
    """Canaries take the names of the allocations they would replace, lowest first."""
    taken = {a.name for a in rollout.canaries}
    names = [a.name for a in sorted(rolling, key=index_of) if a.name not in taken]
    spare = free_indexes(range(group.count))
    while len(names) < missing:
        name = alloc_name(ctx.job, group, next(spare))
        if name not in taken:
            names.append(name)
    changes.placements.extend(Placement(name, canary=True) for name in names[:missing])


def _judge_completion(
    group: TaskGroup,
    rolling: list[Allocation],
    classes: _Classes,
    tracker: DeploymentTracker,
    wants_canaries: bool,
    allocs: list[Allocation],
    changes: GroupChanges,
) -> None:
    """Nomad's isDeploymentComplete for one group: nothing left to change, and enough healthy
    allocations of this deployment (and its canaries promoted)."""
    work_left = rolling or changes.inplace or changes.placements or classes.migrate or classes.reschedule
    state = tracker.groups.get(group.name)
    current = tracker.current
    if work_left or wants_canaries:
        tracker.incomplete.add(group.name)
    elif state is not None and current is not None:
        healthy = healthy_count(allocs, current.id)
        if healthy < max(state.desired_total, state.desired_canaries) or (
            state.desired_canaries > 0 and not state.promoted
        ):
            tracker.incomplete.add(group.name)


def _classify(group: TaskGroup, allocs: list[Allocation], ctx: ReconcileContext) -> _Classes:
    replaced = {a.previous_allocation for a in allocs if a.previous_allocation}
    live_replacements = {a.previous_allocation: a for a in allocs if a.previous_allocation and not a.terminal}
    losers = _reconnect_losers(group, allocs, live_replacements, ctx)
    classes = _Classes()
    for alloc in allocs:
        if alloc.server_terminal:
            continue
        if alloc.id in losers:
            classes.reconnected.append(alloc)
        elif alloc.client_terminal:
            _classify_finished(group, alloc, alloc.id in replaced, ctx, classes)
        elif _disconnected(group, alloc):
            _classify_unknown(group, alloc, alloc.id in live_replacements, ctx, classes)
        elif node_lost(alloc, ctx.nodes):
            classes.lost.append(alloc)
        elif alloc.desired_transition.get("Migrate"):
            classes.migrate.append(alloc)
        elif _replace_unhealthy(group, alloc, alloc.id in replaced, ctx):
            classes.unhealthy.append(alloc)
        else:
            classes.untainted.append(alloc)
    return classes


def _replace_unhealthy(group: TaskGroup, alloc: Allocation, replaced: bool, ctx: ReconcileContext) -> bool:
    """Marked by the deployment watcher as unhealthy, and its reschedule policy still allows a
    replacement (else it stays, and the deployment's progress deadline decides)."""
    return (
        bool(alloc.desired_transition.get("Reschedule"))
        and alloc.healthy is False
        and not replaced
        and attempts_left(group.reschedule, alloc, ctx.now_ns)
    )


def _disconnected(group: TaskGroup, alloc: Allocation) -> bool:
    """An allocation the leader marked unknown when its node stopped heartbeating, within the
    group's disconnect window (past it, the leader marks it lost)."""
    return group.disconnect is not None and alloc.client_status == "unknown"


def _classify_unknown(
    group: TaskGroup, alloc: Allocation, has_replacement: bool, ctx: ReconcileContext, classes: _Classes
) -> None:
    """Replaced while its node is disconnected (if the group allows); once the node is back
    but has not reported the allocation yet, it waits, with its replacement if it has one."""
    assert group.disconnect is not None
    node = ctx.nodes.get(alloc.node_id)
    away = node is not None and node.status == "disconnected"
    if has_replacement:
        return  # its replacement holds the slot until the node reports or the window ends
    if away and group.disconnect.replace:
        classes.disconnecting.append(alloc)
    else:
        classes.waiting.append(alloc)


def _reconnect_losers(
    group: TaskGroup, allocs: list[Allocation], replacements: Mapping[uuid.UUID, Allocation], ctx: ReconcileContext
) -> set[uuid.UUID]:
    """An original whose node came back, running again next to its replacement: keep one, as
    `disconnect.reconcile` says. best_score and longest_running keep the original here: it has
    run longest, and scores are not kept after placement."""
    losers: set[uuid.UUID] = set()
    keep_replacement = group.disconnect is not None and group.disconnect.reconcile == "keep_replacement"
    for original in allocs:
        replacement = replacements.get(original.id)
        if replacement is None or original.terminal or original.client_status == "unknown":
            continue
        if node_lost(original, ctx.nodes):
            continue
        losers.add(original.id if keep_replacement else replacement.id)
    return losers


def _classify_finished(
    group: TaskGroup, alloc: Allocation, replaced: bool, ctx: ReconcileContext, classes: _Classes
) -> None:
    """Completed batch work counts as done; failed work is rescheduled while the policy allows
    and once its delay has passed (or at once when forced), and otherwise keeps its slot (so it is not replaced behind
    the policy's back, nor early: its delayed evaluation comes back for it)."""
    if alloc.client_status == "complete" and ctx.batch:
        classes.untainted.append(alloc)
    elif alloc.client_status == "failed" and not replaced:
        # `job eval -force-reschedule` marks it: now, whatever the policy says (as Nomad).
        forced = bool(alloc.desired_transition.get("ForceReschedule"))
        if forced or (attempts_left(group.reschedule, alloc, ctx.now_ns) and due(alloc, ctx.now_ns)):
            classes.reschedule.append(alloc)
        else:
            classes.untainted.append(alloc)


def _stop_surplus(classes: _Classes, count: int, changes: GroupChanges, version: int) -> set[uuid.UUID]:
    """Beyond `count`: drop allocations that need replacing anyway first, then old versions
    whose name a current one holds (a promoted canary took their place), then the highest indexes."""
    slots = classes.slots()
    surplus = len(slots) - count
    if surplus <= 0:
        return set()
    untainted = {a.id for a in classes.untainted}
    lost = {a.id for a in classes.lost}
    current_names = {a.name for a in slots if a.job_version == version}
    superseded = {a.id for a in slots if a.job_version != version and a.name in current_names}
    victims = sorted(slots, key=lambda a: (a.id in untainted, a.id not in superseded, -index_of(a), str(a.id)))[
        :surplus
    ]
    for alloc in victims:
        if alloc.id in lost:
            changes.stops.append(Stop(alloc, reasons.LOST, "lost"))
        else:
            changes.stops.append(Stop(alloc, reasons.NOT_NEEDED))
    return {a.id for a in victims}


def _updates(
    group: TaskGroup, allocs: list[Allocation], ctx: ReconcileContext, changes: GroupChanges
) -> list[Allocation]:
    """Allocations of older job versions: in place when nothing destructive changed; returns
    the ones that need a destructive update."""
    rolling: list[Allocation] = []
    for alloc in allocs:
        if alloc.terminal or alloc.job_version == ctx.job.version:
            continue
        old_job = ctx.old_jobs.get(alloc.job_version)
        old_group = old_job.group(group.name) if old_job else None
        if old_group is not None and not destructive(old_group, group) and ctx.node_accepts(alloc):
            changes.inplace.append(alloc)
        else:
            rolling.append(alloc)
    return rolling


def _fill(group: TaskGroup, slots: list[Allocation], ctx: ReconcileContext, changes: GroupChanges) -> None:
    """New allocations for the slots nobody holds, named with the lowest free indexes."""
    missing = group.count - len(slots)
    names = free_indexes(index_of(a) for a in slots)
    for _ in range(max(0, missing)):
        changes.placements.append(Placement(alloc_name(ctx.job, group, next(names))))
