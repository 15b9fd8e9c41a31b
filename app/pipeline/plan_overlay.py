"""The applier's pipeline (Nomad's plan pipelining): batch N+1 is checked while batch N's writes
and commit are still running. N+1 reads the committed state; when that read does not see N yet,
N's effects are laid over it, so N+1 is checked against the state as N will leave it. Pure.

An effect is a delta (each node's usage after N minus before N), not N's usage itself: N+1's read
is newer than N's, so whatever else changed meanwhile (an allocation that finished and freed its
room) is kept. Should N commit less than it was checked for (a lease lost, a refused write), the
overlay charged N+1 for room that stays free: a plan refused for nothing, which its worker re-plans;
never a node given more than it holds."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.pipeline.plan_check import BatchState, Touched, Verdict
from app.structs import NodeUsage


@dataclass(frozen=True)
class Effects:
    """What one checked batch changes: the usage of every node it placed on, stopped or evicted
    on, before and after it; and every allocation it placed, stopped or evicted, as it leaves them."""

    before: Mapping[uuid.UUID, NodeUsage]
    after: Mapping[uuid.UUID, NodeUsage]
    touched: Mapping[uuid.UUID, Touched]


def effects(before: Mapping[uuid.UUID, NodeUsage], state: BatchState, verdicts: Iterable[Verdict]) -> Effects:
    """The effects of a batch checked from usage `before` to `state`, with these verdicts."""
    nodes: set[uuid.UUID] = set()
    allocs: set[uuid.UUID] = set()
    for verdict in verdicts:
        nodes.update(verdict.accepted, verdict.stops, verdict.preemptions)
        allocs.update(p.alloc_id for placed in verdict.accepted.values() for p in placed)
        allocs.update(s.alloc_id for stops in (*verdict.stops.values(), *verdict.preemptions.values()) for s in stops)
    empty = NodeUsage()
    return Effects(
        before={n: before.get(n, empty) for n in nodes},
        after={n: state.usage.get(n, empty) for n in nodes},
        touched={a: state.touched[a] for a in allocs if a in state.touched},
    )


def overlay(state: BatchState, earlier: Effects) -> None:
    """Lay `earlier`'s effects over `state` (read before they were committed), in place: each
    node's usage moves by the earlier batch's delta, and the allocations it placed, stopped or
    evicted stand as it left them."""
    empty = NodeUsage()
    for node_id, after in earlier.after.items():
        if node_id not in state.nodes:
            continue  # not in this batch: nothing here is checked against it
        before = earlier.before[node_id]
        read = state.usage.get(node_id, empty)
        freed, taken = before.ports - after.ports, after.ports - before.ports
        state.usage[node_id] = NodeUsage(
            read.resources + (after.resources - before.resources),
            (read.ports - freed) | taken if freed or taken else read.ports,
        )
    for alloc_id, touched in earlier.touched.items():
        state.touched[alloc_id] = touched
