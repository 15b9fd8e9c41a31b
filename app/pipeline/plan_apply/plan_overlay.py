"""The applier's pipeline (Nomad's plan pipelining): batch N+1 is checked while batch N's writes
and commit are still running. N+1 reads the committed state; when that read does not see N yet,
N's placements are laid over it, so N+1 is checked against the state as N may leave it. Pure.

Only what N takes is laid over, never what it frees: N may commit less than it was checked for
(a plan whose lease moved on, writes the database refused, a failure that ends the term), so
room N's stops, evictions or shrinking in-place updates free is used only once a read sees N
commit. N's placements are charged on top of N+1's read (which is newer than N's, so whatever
else changed meanwhile, an allocation that finished and freed its room, is kept), and the
allocations N placed, stopped or evicted stand as N left them (one N stopped is no longer live:
stopping it again frees nothing, evicting it is refused). Either way a plan may be refused for
room that turns out free, which its worker re-plans; a node is never given more than it holds."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.pipeline.plan_apply.plan_check import BatchState, Touched, Verdict
from app.scheduler.fit import add_usage
from app.structs import NodeUsage


@dataclass(frozen=True)
class Effects:
    """What one checked batch may add: on every node it places on, the resources and host ports
    its placements take; and every allocation it placed, stopped or evicted, as it leaves them."""

    taken: Mapping[uuid.UUID, NodeUsage]
    touched: Mapping[uuid.UUID, Touched]


def effects(state: BatchState, verdicts: Iterable[Verdict]) -> Effects:
    """The effects of a batch whose check left `state`, with these verdicts."""
    taken: dict[uuid.UUID, NodeUsage] = {}
    allocs: set[uuid.UUID] = set()
    for verdict in verdicts:
        for node_id, placed in verdict.accepted.items():
            usage = taken.get(node_id, NodeUsage())
            for p in placed:
                usage = add_usage(usage, p.resources, p.ports, p.cores)
            taken[node_id] = usage
            allocs.update(p.alloc_id for p in placed)
        allocs.update(s.alloc_id for stops in (*verdict.stops.values(), *verdict.preemptions.values()) for s in stops)
    return Effects(taken, {a: state.touched[a] for a in allocs if a in state.touched})


def overlay(state: BatchState, earlier: Effects) -> None:
    """Lay `earlier`'s effects over `state` (read before they were committed), in place."""
    empty = NodeUsage()
    for node_id, taken in earlier.taken.items():
        if node_id not in state.nodes:
            continue  # not in this batch: nothing here is checked against it
        read = state.usage.get(node_id, empty)
        state.usage[node_id] = NodeUsage(
            read.resources + taken.resources, read.ports | taken.ports, read.cores | taken.cores
        )
    for alloc_id, touched in earlier.touched.items():
        state.touched[alloc_id] = touched
