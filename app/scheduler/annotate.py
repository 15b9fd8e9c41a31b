"""Plan annotations for `job plan`: what a pass would do to each task group (Nomad's
DesiredTGUpdates), read off the plan it built and the allocations it started from."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from app.scheduler import reasons
from app.structs import Allocation, AllocationStop, SchedulerResult, Snapshot


@dataclass
class DesiredUpdates:
    ignore: int = 0
    place: int = 0
    migrate: int = 0
    stop: int = 0
    in_place_update: int = 0
    destructive_update: int = 0
    canary: int = 0
    preemptions: int = 0

    @property
    def changes(self) -> bool:
        """Nomad's `job plan` exit code 1: allocations would be created or destroyed."""
        return self.place + self.stop + self.migrate + self.destructive_update + self.canary > 0


@dataclass
class _Tally:
    by_group: dict[str, DesiredUpdates] = field(default_factory=dict)

    def __getitem__(self, group: str) -> DesiredUpdates:
        return self.by_group.setdefault(group, DesiredUpdates())


def desired_updates(snapshot: Snapshot, result: SchedulerResult) -> dict[str, DesiredUpdates]:
    plan = result.plan
    existing = {a.id: a for a in snapshot.allocations}
    stops: dict[uuid.UUID, AllocationStop] = {s.alloc_id: s for items in plan.node_update.values() for s in items}
    placed = [a for items in plan.node_allocation.values() for a in items]
    tally = _Tally()
    for group in snapshot.job.task_groups if snapshot.job else ():
        tally[group.name].place += result.queued_allocations.get(group.name, 0)  # wanted, but nowhere to go
    replaced: set[uuid.UUID] = set()
    for alloc in placed:
        _count_placement(tally[alloc.task_group], alloc, existing, stops, replaced)
    for alloc_id in stops:
        if alloc_id not in replaced and alloc_id in existing:
            tally[existing[alloc_id].task_group].stop += 1
    touched = Counter(existing[i].task_group for i in {*stops, *(a.id for a in placed)} if i in existing)
    live = Counter(a.task_group for a in snapshot.allocations if not a.terminal)
    for name, count in live.items():
        tally[name].ignore += max(0, count - touched[name])
    return tally.by_group


def _count_placement(
    updates: DesiredUpdates,
    alloc: Allocation,
    existing: dict[uuid.UUID, Allocation],
    stops: dict[uuid.UUID, AllocationStop],
    replaced: set[uuid.UUID],
) -> None:
    updates.preemptions += len(alloc.preempted_allocations)
    if alloc.id in existing:
        updates.in_place_update += 1
        return
    if alloc.canary:
        updates.canary += 1
        return
    previous = alloc.previous_allocation
    stop = stops.get(previous) if previous is not None else None
    if stop is None or previous is None:
        updates.place += 1
        return
    replaced.add(previous)
    if stop.description == reasons.UPDATING:
        updates.destructive_update += 1
    elif stop.description == reasons.MIGRATING:
        updates.migrate += 1
    else:
        updates.place += 1
