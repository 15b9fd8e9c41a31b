"""Same inputs, same plan; a different evaluation explores nodes in another order."""

from __future__ import annotations

import uuid

import pytest

from app.scheduler.feasibility.feasible import JobScope, in_job_scope
from app.scheduler.shuffle import IdSource, LazyShuffle, Rng, seed_for
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
    full = list(LazyShuffle(items, Rng(1)))
    assert sorted(full) == items and full != items
    ids = IdSource(42)
    first = [ids.next() for _ in range(100)]
    assert len(set(first)) == 100 and all(i.version == 4 for i in first)
    assert first == [IdSource(42).next() for _ in range(1)] + first[1:]


def test_an_id_source_never_draws_a_taken_id() -> None:
    plain = IdSource(42)
    first, second = plain.next(), plain.next()
    assert IdSource(42, [first]).next() == second


def test_a_second_pass_on_the_same_snapshot_index_never_reuses_an_allocation_id() -> None:
    """The random-kill test's lost placement: a pass applied in part (two of its four
    placements), then the next pass of the same evaluation read a snapshot with the same index
    that held those two. Seeded by the evaluation and the index alone, it drew the first pass's
    IDs again, and a new placement took an existing allocation's ID."""
    four = job(groups=[group(count=4)], type="batch")
    first = placed(run(snapshot(four, NODES), now=1))
    applied = first[:2]
    for now in (2, 1):  # a later pass, and one with the very same clock (only the snapshot differs)
        again = placed(run(snapshot(four, NODES, applied), now=now))
        assert len(again) == 2
        assert {a.id for a in again}.isdisjoint(a.id for a in applied)
        assert {a.name for a in again}.isdisjoint(a.name for a in applied)


def test_lazy_shuffle_draws_the_same_order_however_it_is_read() -> None:
    items = list(range(50))
    partly = LazyShuffle(items, Rng(9))
    first_three = [partly[0], partly[1], partly[2]]
    assert len(partly) == 50 and partly.members() != list(LazyShuffle(items, Rng(9)))  # only 3 drawn
    assert list(partly) == list(LazyShuffle(items, Rng(9)))
    assert first_three == list(LazyShuffle(items, Rng(9)))[:3]
    assert partly[-1] == partly[49] and partly[47:] == list(partly)[47:]
    assert sorted(partly.members()) == items
    with pytest.raises(IndexError):
        partly[50]


def test_lazy_shuffle_is_uniform_enough() -> None:
    # Every item reaches the first slot about equally often over many seeds (chi-square-ish bound).
    counts = [0] * 5
    for seed in range(5000):
        counts[LazyShuffle(range(5), Rng(seed))[0]] += 1
    assert all(800 < c < 1200 for c in counts), counts


def test_job_scope_matches_in_job_scope_per_node() -> None:
    nodes = [
        node(f"n{i}", dc=dc, pool=pool)
        for i, (dc, pool) in enumerate(
            [("dc1", "default"), ("dc2", "default"), ("eu-1", "gpu"), ("eu-2", "default"), ("dc1", "gpu")]
        )
    ]
    for datacenters, pool in [(("dc*",), "default"), (("eu-*", "dc2"), "all"), (("*",), "gpu"), ((), "default")]:
        scoped = job(datacenters=datacenters, pool=pool)
        matcher = JobScope(scoped)
        assert [matcher(n) for n in nodes] == [in_job_scope(n, scoped) for n in nodes]
