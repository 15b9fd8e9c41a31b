"""Generic (service/batch) reconciliation of one task group: what to stop, update in place,
and place, from the group's existing allocations. Pure decisions; no node selection."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from app.scheduler import reasons
from app.scheduler.allocs import alloc_name, free_indexes, index_of
from app.scheduler.reschedule import attempts_left, due
from app.scheduler.updates import destructive
from app.structs import Allocation, Job, Node, TaskGroup

LOST_NODE_STATUSES = ("down", "disconnected")


@dataclass(frozen=True)
class Stop:
    alloc: Allocation
    description: str
    client_status: str | None = None


@dataclass(frozen=True)
class Placement:
    name: str
    previous: Allocation | None = None
    # Set for replacements whose old allocation should stop only once the new one is placed
    # (destructive updates, reschedules): if placement fails, the old one keeps its place.
    stop_previous: str | None = None
    reschedule: bool = False


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
    # `unknown` on a disconnected node: replaced now (disconnecting) or kept waiting (no replace).
    disconnecting: list[Allocation] = field(default_factory=list)
    waiting: list[Allocation] = field(default_factory=list)
    # Original or replacement, whichever `disconnect.reconcile` drops now that the node is back.
    reconnected: list[Allocation] = field(default_factory=list)

    def slots(self) -> list[Allocation]:
        """Every allocation that currently holds one of the group's `count` slots."""
        return self.lost + self.reschedule + self.migrate + self.disconnecting + self.waiting + self.untainted


def reconcile_group(group: TaskGroup, allocs: Iterable[Allocation], ctx: ReconcileContext) -> GroupChanges:
    classes = _classify(group, list(allocs), ctx)
    changes = GroupChanges()
    dropped = _stop_surplus(classes, group.count, changes)
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
    for alloc in classes.disconnecting:
        if alloc.id not in dropped:
            changes.placements.append(Placement(alloc.name, alloc))  # the original stays, unknown
    changes.stops.extend(Stop(alloc, reasons.RECONNECTED) for alloc in classes.reconnected)
    kept = [a for a in classes.untainted if a.id not in dropped]
    _updates(group, kept, ctx, changes)
    _fill(group, [a for a in classes.slots() if a.id not in dropped], ctx, changes)
    return changes


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
        else:
            classes.untainted.append(alloc)
    return classes


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
    and once its delay has passed, and otherwise keeps its slot (so it is not replaced behind
    the policy's back, nor early: its delayed evaluation comes back for it)."""
    if alloc.client_status == "complete" and ctx.batch:
        classes.untainted.append(alloc)
    elif alloc.client_status == "failed" and not replaced:
        if attempts_left(group.reschedule, alloc, ctx.now_ns) and due(alloc, ctx.now_ns):
            classes.reschedule.append(alloc)
        else:
            classes.untainted.append(alloc)


def _stop_surplus(classes: _Classes, count: int, changes: GroupChanges) -> set[uuid.UUID]:
    """Beyond `count`: drop allocations that need replacing anyway first, then the highest indexes."""
    slots = classes.slots()
    surplus = len(slots) - count
    if surplus <= 0:
        return set()
    untainted = {a.id for a in classes.untainted}
    lost = {a.id for a in classes.lost}
    victims = sorted(slots, key=lambda a: (a.id in untainted, -index_of(a), str(a.id)))[:surplus]
    for alloc in victims:
        if alloc.id in lost:
            changes.stops.append(Stop(alloc, reasons.LOST, "lost"))
        else:
            changes.stops.append(Stop(alloc, reasons.NOT_NEEDED))
    return {a.id for a in victims}


def _updates(group: TaskGroup, allocs: list[Allocation], ctx: ReconcileContext, changes: GroupChanges) -> None:
    """Allocations of older job versions: in place when nothing destructive changed."""
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
    for alloc in limit_destructive(group, rolling):
        changes.placements.append(Placement(alloc.name, alloc, reasons.UPDATING))


def limit_destructive(group: TaskGroup, allocs: list[Allocation]) -> list[Allocation]:
    """Seam for the update block (max_parallel, canaries, deployments): all at once for now."""
    return sorted(allocs, key=index_of)


def _fill(group: TaskGroup, slots: list[Allocation], ctx: ReconcileContext, changes: GroupChanges) -> None:
    """New allocations for the slots nobody holds, named with the lowest free indexes."""
    missing = group.count - len(slots)
    names = free_indexes(index_of(a) for a in slots)
    for _ in range(max(0, missing)):
        changes.placements.append(Placement(alloc_name(ctx.job, group, next(names))))
