"""A worker loop schedules a batch of evaluations (of distinct jobs) on one snapshot, one after
the other: each pass must see the room the earlier passes' plans take, or two of them would
pick the same last room and the applier would refuse one (a retry). Pure.

Only what a plan takes is laid over, never what it frees (its stops and evictions may yet be
refused), as the applier's pipeline does (plan_overlay.py): a later pass may find a node fuller
than it will be, never emptier. A plan's allocation that its job already has (an in-place
update) holds its room in the snapshot already: only new allocations are charged."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping

from app.scheduler.fit import add_usage
from app.structs import NodeUsage, Plan, Snapshot


def taken_by(plan: Plan, snapshot: Snapshot) -> dict[uuid.UUID, NodeUsage]:
    """The room the plan's new allocations take, per node (resources and host ports)."""
    existing = {a.id for a in snapshot.allocations}
    taken: dict[uuid.UUID, NodeUsage] = {}
    for node_id, allocations in plan.node_allocation.items():
        for alloc in allocations:
            if alloc.id not in existing:
                taken[node_id] = add_usage(
                    taken.get(node_id, NodeUsage()), alloc.resources, alloc.host_ports, alloc.reserved_cores
                )
    return taken


def combine(first: Mapping[uuid.UUID, NodeUsage], more: Mapping[uuid.UUID, NodeUsage]) -> dict[uuid.UUID, NodeUsage]:
    """Two sets of taken room as one."""
    combined = dict(first)
    for node_id, usage in more.items():
        combined[node_id] = add_usage(combined.get(node_id, NodeUsage()), usage.resources, usage.ports, usage.cores)
    return combined


def with_taken(snapshot: Snapshot, taken: Mapping[uuid.UUID, NodeUsage]) -> Snapshot:
    """The snapshot with `taken` charged on top of its usage."""
    if not taken:
        return snapshot
    usage = dict(snapshot.usage)
    for node_id, extra in taken.items():
        usage[node_id] = add_usage(usage.get(node_id, NodeUsage()), extra.resources, extra.ports, extra.cores)
    return dataclasses.replace(snapshot, usage=usage)
