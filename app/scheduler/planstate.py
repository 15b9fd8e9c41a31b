"""The plan under construction and its effect on the cluster, so every later decision in
the same pass sees the stops and placements made before it (usage, co-location counts,
property counts for distinct_property and spread)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping

from app.scheduler.feasibility.targets import resolve
from app.scheduler.fit import add_usage, remove_usage
from app.scheduler.preemption import JobGroup, job_group
from app.structs import Allocation, AllocationStop, Node, NodeUsage, Plan, RunningAllocation
from app.wire.allocation import AllocClientStatus

_EMPTY = NodeUsage()
# (target, group) -> counts of this job's live allocations per property value; group None = whole job.
PropertyKey = tuple[str, str | None]


class PlanState:
    def __init__(
        self, usage: Mapping[uuid.UUID, NodeUsage], live: Iterable[Allocation], nodes: Mapping[uuid.UUID, Node]
    ) -> None:
        self._usage = dict(usage)
        self._nodes = nodes
        self._live: dict[uuid.UUID, Allocation] = {}
        self._on_node: dict[uuid.UUID, Counter[str]] = {}
        self._properties: dict[PropertyKey, Counter[str]] = {}
        self._stops: dict[uuid.UUID, tuple[Allocation, AllocationStop]] = {}
        self._placed: dict[uuid.UUID, list[Allocation]] = {}
        self._placed_count = 0  # placements in _placed: the size of the next chunk
        self._updated_in_place = False
        self._evicted: dict[uuid.UUID, AllocationStop] = {}
        self._evicted_nodes: dict[uuid.UUID, list[AllocationStop]] = {}
        self._evicted_counts: Counter[JobGroup] = Counter()
        for alloc in live:
            self._add_live(alloc)

    # --- what the pass reads -------------------------------------------------------------
    def usage(self, node_id: uuid.UUID) -> NodeUsage:
        return self._usage.get(node_id, _EMPTY)

    def count_on(self, node_id: uuid.UUID, group: str | None = None) -> int:
        """This job's live allocations on the node (of one group, or of any)."""
        counts = self._on_node.get(node_id)
        if not counts:
            return 0
        return counts[group] if group is not None else counts.total()

    def property_counts(self, target: str, group: str | None) -> Counter[str]:
        """Live allocations of the job (or group) per value of `target` on their nodes."""
        key = (target, group)
        if key not in self._properties:
            counts: Counter[str] = Counter()
            for alloc in self._live.values():
                value = self._value_of(alloc, key)
                if value is not None:
                    counts[value] += 1
            self._properties[key] = counts
        return self._properties[key]

    def is_stopped(self, alloc_id: uuid.UUID) -> bool:
        return alloc_id in self._stops

    def is_preempted(self, alloc_id: uuid.UUID) -> bool:
        return alloc_id in self._evicted

    def preempted_counts(self) -> Counter[JobGroup]:
        """Evictions this plan already makes per job group (for the max_parallel penalty)."""
        return self._evicted_counts

    # --- what the pass decides ------------------------------------------------------------
    def stop(self, alloc: Allocation, description: str, client_status: AllocClientStatus | None = None) -> None:
        if alloc.id in self._stops:
            return
        self._stops[alloc.id] = (alloc, AllocationStop(alloc.id, "stop", description, client_status))
        if alloc.id in self._live:
            self._remove_live(alloc)
            self._usage[alloc.node_id] = remove_usage(
                self.usage(alloc.node_id), alloc.resources, alloc.host_ports, alloc.reserved_cores
            )

    def unstop(self, alloc: Allocation) -> None:
        """Take back a stop whose replacement could not be placed (keep the old one running)."""
        if self._stops.pop(alloc.id, None) is not None and not alloc.terminal:
            self._add_live(alloc)
            self._usage[alloc.node_id] = add_usage(
                self.usage(alloc.node_id), alloc.resources, alloc.host_ports, alloc.reserved_cores
            )

    def preempt(self, victims: Iterable[RunningAllocation], by: uuid.UUID) -> None:
        """Evict other jobs' allocations to make room for allocation `by` (Nomad's AppendPreemptedAlloc)."""
        for victim in victims:
            alloc = victim.alloc
            if alloc.id in self._evicted:
                continue
            stop = AllocationStop(alloc.id, "evict", f"Preempted by alloc ID {by}", preempted_by=by)
            self._evicted[alloc.id] = stop
            self._evicted_nodes.setdefault(alloc.node_id, []).append(stop)
            self._evicted_counts[job_group(victim)] += 1
            self._usage[alloc.node_id] = remove_usage(
                self.usage(alloc.node_id), alloc.resources, alloc.host_ports, alloc.reserved_cores
            )

    def place(self, alloc: Allocation) -> None:
        self._placed.setdefault(alloc.node_id, []).append(alloc)
        self._placed_count += 1
        self._add_live(alloc)
        self._usage[alloc.node_id] = add_usage(
            self.usage(alloc.node_id), alloc.resources, alloc.host_ports, alloc.reserved_cores
        )

    def update_in_place(self, alloc: Allocation) -> None:
        """Same id, same node, same resources: nothing to re-account."""
        self._placed.setdefault(alloc.node_id, []).append(alloc)
        self._updated_in_place = True

    # --- streaming a big plan in chunks -----------------------------------------------------
    @property
    def placed_count(self) -> int:
        """Fresh placements not yet taken as a chunk."""
        return self._placed_count

    @property
    def only_placements(self) -> bool:
        """Nothing but fresh placements so far: no stop, eviction or in-place update, which must
        travel in one plan with the placements they make room for."""
        return not (self._stops or self._evicted or self._updated_in_place)

    def take_placements(self) -> dict[uuid.UUID, tuple[Allocation, ...]]:
        """The placements made since the last take, as a plan's node_allocation; they leave the
        plan under construction but stay in its usage and counts, so later decisions still see them."""
        taken = {node: tuple(allocs) for node, allocs in self._placed.items()}
        self._placed, self._placed_count = {}, 0
        return taken

    def plan(self, eval_id: uuid.UUID, priority: int, snapshot_index: int, all_at_once: bool) -> Plan:
        updates: dict[uuid.UUID, list[AllocationStop]] = {}
        for alloc, stop in self._stops.values():
            updates.setdefault(alloc.node_id, []).append(stop)
        return Plan(
            eval_id=eval_id,
            priority=priority,
            snapshot_index=snapshot_index,
            all_at_once=all_at_once,
            node_update={node: tuple(stops) for node, stops in updates.items()},
            node_allocation={node: tuple(allocs) for node, allocs in self._placed.items()},
            node_preemptions={node: tuple(stops) for node, stops in self._evicted_nodes.items()},
        )

    # --- bookkeeping --------------------------------------------------------------------
    def _value_of(self, alloc: Allocation, key: PropertyKey) -> str | None:
        target, group = key
        node = self._nodes.get(alloc.node_id)
        if node is None or (group is not None and alloc.task_group != group):
            return None
        return resolve(target, node)

    def _add_live(self, alloc: Allocation) -> None:
        self._track(alloc, +1)

    def _remove_live(self, alloc: Allocation) -> None:
        self._track(alloc, -1)

    def _track(self, alloc: Allocation, delta: int) -> None:
        if delta > 0:
            self._live[alloc.id] = alloc
        else:
            self._live.pop(alloc.id, None)
        counts = self._on_node.get(alloc.node_id)
        if counts is None:  # not setdefault: that would build a Counter for every placement
            counts = self._on_node[alloc.node_id] = Counter()
        counts[alloc.task_group] += delta
        for key, counts in self._properties.items():
            value = self._value_of(alloc, key)
            if value is not None:
                counts[value] += delta
