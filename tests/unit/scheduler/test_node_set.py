"""Snapshot.nodes is always a NodeSet: nodes in canonical order (by the ID's integer) with an
index by ID, built once and shared, never re-sorted for a pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import TypeVar

import pytest

from app.structs import NodeSet, Snapshot
from tests.support.scheduler_harness import job, node, placed, run, snapshot

pytestmark = pytest.mark.unit
NODES = [node(f"n{i}") for i in range(30)]
T = TypeVar("T")


def test_a_plain_tuple_is_sorted_into_a_node_set() -> None:
    snap = Snapshot(index=1, job=None, nodes=tuple(reversed(NODES)), allocations=())
    assert isinstance(snap.nodes, NodeSet)
    assert [n.id.int for n in snap.nodes] == sorted(n.id.int for n in NODES)
    assert snap.node_set.by_id == {n.id: n for n in NODES}
    assert snap == Snapshot(index=1, job=None, nodes=tuple(NODES), allocations=())  # input order never matters


def test_a_node_set_is_shared_not_rebuilt() -> None:
    shared = NodeSet(NODES)
    snap = Snapshot(index=1, job=None, nodes=shared, allocations=())
    later = dataclasses.replace(snap, index=2)
    assert snap.nodes is shared and later.nodes is shared and later.node_set.by_id is shared.by_id


def test_the_index_is_read_only() -> None:
    with pytest.raises(TypeError):
        NodeSet(NODES).by_id[NODES[0].id] = NODES[1]  # type: ignore[index]  # the write mypy refuses, tried at run time


def test_what_is_derived_from_a_node_set_is_made_once_per_key() -> None:
    shared, calls = NodeSet(NODES), []

    def count() -> int:
        calls.append(1)
        return len(shared)

    assert shared.derived("size", count) == 30 and shared.derived("size", count) == 30
    assert len(calls) == 1
    assert NodeSet(NODES).derived("size", count) == 30 and len(calls) == 2  # a new node set: made again


def test_passes_on_one_node_set_scan_its_nodes_once_per_job_scope() -> None:
    """The placeable nodes of a scope are found once for every evaluation on the same nodes,
    and only the nodes that are ready and in the job's datacenters and pool are offered."""
    nodes = [
        *[node(f"a{i}") for i in range(6)],
        node("draining", draining=True),
        node("ineligible", eligibility="ineligible"),
        node("down", status="down"),
        node("other-dc", dc="dc2"),
        node("other-pool", pool="gpu"),
    ]
    snap = snapshot(job("web", datacenters=("dc1",)), nodes)
    scans: list[int] = []
    original = snap.node_set.derived

    def counting(key: Hashable, compute: Callable[[], T]) -> T:
        def scanned() -> T:
            scans.append(1)
            return compute()

        return original(key, scanned)

    object.__setattr__(snap.node_set, "derived", counting)
    first, second = run(snap, key="e1"), run(snap, key="e2")
    assert len(scans) == 2  # "placeable" and "pool", once each for both evaluations
    names = {a.node_name for r in (first, second) for a in placed(r)}
    assert names and names <= {f"a{i}" for i in range(6)}
    assert first.failed_tg_allocs == {} and second.failed_tg_allocs == {}


def test_another_scope_is_scanned_for_itself() -> None:
    nodes = [node("east", dc="east"), node("west", dc="west")]
    shared = NodeSet(nodes)
    east = run(snapshot(job("e", datacenters=("east",)), shared), key="x")
    west = run(snapshot(job("w", datacenters=("west",)), shared), key="y")
    assert {a.node_name for a in placed(east)} == {"east"}
    assert {a.node_name for a in placed(west)} == {"west"}
