"""Disconnected nodes: allocations `unknown` are replaced (or not), and when the node returns
one of original and replacement is kept as `disconnect.reconcile` says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.scheduler import reasons
from app.structs import DisconnectStrategy
from tests.support.scheduler_harness import alloc, group, job, node, placed, run, snapshot, stopped

pytestmark = pytest.mark.unit
S = 1_000_000_000


def test_disconnected_allocation_is_replaced_and_the_original_kept_when_its_node_returns() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    g = replace(group(count=1), disconnect=DisconnectStrategy(60 * S))
    j = job(groups=[g])
    original = alloc(j, nodes[0], 0, client="unknown")
    away = [replace(nodes[0], status="disconnected"), *nodes[1:]]
    (replacement,) = placed(run(snapshot(j, away, [original])))
    assert replacement.previous_allocation == original.id and replacement.node_id != original.node_id
    assert original.id not in stopped(run(snapshot(j, away, [original])))
    # While still away: the replacement holds the slot, nothing else happens.
    pending = replace(replacement, client_status="running")
    assert run(snapshot(j, away, [original, pending])).plan.is_noop
    # Back (initializing) but not reported yet: both wait, nothing is stopped or placed.
    returning = [replace(nodes[0], status="initializing"), *nodes[1:]]
    assert run(snapshot(j, returning, [original, pending])).plan.is_noop
    # Back, and reported running again: one allocation per slot, the original by default.
    back = replace(original, client_status="running")
    result = run(snapshot(j, nodes, [back, pending]))
    assert stopped(result)[pending.id].description == reasons.RECONNECTED and back.id not in stopped(result)
    keep_new = job(groups=[replace(g, disconnect=DisconnectStrategy(60 * S, reconcile="keep_replacement"))])
    assert back.id in stopped(run(snapshot(keep_new, nodes, [back, pending])))


def test_without_replace_the_unknown_allocation_keeps_its_slot() -> None:
    nodes = [node(f"n{i}") for i in range(2)]
    j = job(groups=[replace(group(count=1), disconnect=DisconnectStrategy(60 * S, replace=False))])
    away = [replace(nodes[0], status="disconnected"), nodes[1]]
    assert run(snapshot(j, away, [alloc(j, nodes[0], 0, client="unknown")])).plan.is_noop
