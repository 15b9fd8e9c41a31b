"""Same inputs, same plan; a different evaluation explores nodes in another order."""

from __future__ import annotations

import uuid

import pytest

from app.scheduler.shuffle import IdSource, Rng, seed_for, shuffled
from tests.support.scheduler_harness import group, job, node, placed, run, snapshot

pytestmark = pytest.mark.unit
NODES = [node(f"n{i}") for i in range(40)]
J = job(groups=[group(count=10, dynamic_ports=1)], type="batch")


def test_same_input_same_plan() -> None:
    assert run(snapshot(J, NODES)) == run(snapshot(J, NODES))


def test_input_node_order_does_not_matter() -> None:
    assert run(snapshot(J, NODES)) == run(snapshot(J, list(reversed(NODES))))


def test_different_eval_or_index_changes_the_order() -> None:
    def order(key: str, index: int = 100) -> list[str]:
        return [a.node_name for a in placed(run(snapshot(J, NODES, index=index), key=key))]

    assert order("e1") != order("e2")
    assert order("e1") != order("e1", index=101)


def test_seed_mixes_eval_id_and_index() -> None:
    eval_id = uuid.UUID(int=(7 << 64) | 5)
    assert seed_for(eval_id, 3) == 5 ^ 3


def test_shuffle_is_a_permutation_and_ids_are_v4() -> None:
    items = list(range(100))
    assert sorted(shuffled(items, Rng(1))) == items and shuffled(items, Rng(1)) != items
    ids = IdSource(42)
    first = [ids.next() for _ in range(100)]
    assert len(set(first)) == 100 and all(i.version == 4 for i in first)
    assert first == [IdSource(42).next() for _ in range(1)] + first[1:]
