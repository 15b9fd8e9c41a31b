"""Snapshot.nodes is always a NodeSet: nodes in canonical order (by the ID's integer) with an
index by ID, built once and shared, never re-sorted for a pass."""

from __future__ import annotations

import dataclasses

import pytest

from app.structs import NodeSet, Snapshot
from tests.support.scheduler_harness import node

pytestmark = pytest.mark.unit
NODES = [node(f"n{i}") for i in range(30)]


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
        NodeSet(NODES).by_id[NODES[0].id] = NODES[1]  # type: ignore[index]
