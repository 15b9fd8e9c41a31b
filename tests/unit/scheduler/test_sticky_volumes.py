"""per_alloc and sticky host volumes in the scheduler (Nomad 1.10's HostVolumeChecker with
AllocSuffix and task group claims)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from app.scheduler.feasibility.feasible import MISSING_HOST_VOLUMES
from app.structs import ClaimedVolume, HostVolumeAsk, Job, Node, Snapshot, VolumeClaim
from app.structs.groups import volume_source
from tests.support.scheduler_harness import alloc, group, job, node, placed, run, snapshot, uid

pytestmark = pytest.mark.unit

KEYS = [f"e{i}" for i in range(12)]


def _dynamic(base: Node, *names: str, namespace: str = "default") -> Node:
    return dataclasses.replace(base, dynamic_host_volumes={(namespace, n): _volume_id(base, n) for n in names})


def _volume_id(n: Node, name: str) -> uuid.UUID:
    return uid(f"volume/{n.name}/{name}")


def _sticky_job(count: int = 1) -> Job:
    return job(groups=[group(count=count, host_volumes=(HostVolumeAsk("data", sticky=True),))])


def _three_nodes() -> list[Node]:
    return [_dynamic(node(name), "data") for name in ("a", "b", "c")]


def _claim(j: Job, n: Node, alloc_id: uuid.UUID, name: str = "data") -> VolumeClaim:
    return VolumeClaim(uid(f"claim/{n.name}"), j.task_groups[0].name, alloc_id, _volume_id(n, name), name, n.id)


def _with_claims(snap: Snapshot, *claims: VolumeClaim) -> Snapshot:
    return dataclasses.replace(snap, volume_claims=claims)


def test_the_alloc_suffix_is_the_index_in_brackets() -> None:
    assert volume_source("data", True, "web.db[12]") == "data[12]"
    assert volume_source("data", False, "web.db[12]") == "data"
    assert HostVolumeAsk("data", per_alloc=True).source_for("web.g[0]") == "data[0]"


def test_per_alloc_places_each_index_where_its_volume_is() -> None:
    nodes = [_dynamic(node("zero"), "data[0]"), _dynamic(node("one"), "data[1]"), _dynamic(node("plain"), "data")]
    j = job(groups=[group(count=2, host_volumes=(HostVolumeAsk("data", per_alloc=True),))])
    for key in KEYS[:4]:
        by_name = {a.name: a.node_name for a in placed(run(snapshot(j, nodes), key=key))}
        assert by_name == {"web.g[0]": "zero", "web.g[1]": "one"}


def test_per_alloc_with_static_volumes_and_a_missing_index() -> None:
    nodes = [dataclasses.replace(node("zero"), host_volumes={"data[0]": False})]
    j = job(groups=[group(count=2, host_volumes=(HostVolumeAsk("data", per_alloc=True),))])
    result = run(snapshot(j, nodes))
    assert [(a.name, a.node_name) for a in placed(result)] == [("web.g[0]", "zero")]
    assert result.failed_tg_allocs["g"].constraint_filtered == {MISSING_HOST_VOLUMES: 1}


def test_a_first_sticky_placement_claims_the_volume_it_got() -> None:
    nodes = _three_nodes()
    (new,) = placed(run(snapshot(_sticky_job(), nodes)))
    on = next(n for n in nodes if n.id == new.node_id)
    assert new.claims == (ClaimedVolume(_volume_id(on, "data"), "data"),)


def test_a_non_sticky_placement_claims_nothing() -> None:
    j = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("data"),))])
    (new,) = placed(run(snapshot(j, _three_nodes())))
    assert new.claims == ()


def test_a_replacement_lands_on_the_claimed_volume() -> None:
    nodes, j = _three_nodes(), _sticky_job()
    old = alloc(j, nodes[1], desired="stop", client="complete")
    claimed = _with_claims(snapshot(j, nodes, [old]), _claim(j, nodes[1], old.id))
    unclaimed = snapshot(j, nodes, [old])
    for key in KEYS:
        (new,) = placed(run(claimed, key=key))
        assert new.node_name == "b"
    # Without the claim the seeded shuffle spreads the same placements over the nodes.
    assert {placed(run(unclaimed, key=key))[0].node_name for key in KEYS} != {"b"}


def test_a_claim_whose_allocation_is_gone_binds_nothing() -> None:
    nodes, j = _three_nodes(), _sticky_job()
    forgotten = _with_claims(snapshot(j, nodes), _claim(j, nodes[1], uid("collected")))
    assert {placed(run(forgotten, key=key))[0].node_name for key in KEYS} != {"b"}


def test_a_claimed_volume_that_is_not_ready_blocks_the_group() -> None:
    nodes, j = _three_nodes(), _sticky_job()
    old = alloc(j, nodes[1], desired="stop", client="complete")
    gone = [nodes[0], dataclasses.replace(nodes[1], dynamic_host_volumes={}), nodes[2]]
    result = run(_with_claims(snapshot(j, gone, [old]), _claim(j, nodes[1], old.id)))
    assert not placed(result)
    assert result.failed_tg_allocs["g"].constraint_filtered == {MISSING_HOST_VOLUMES: 3}


def test_claims_met_by_live_allocations_leave_new_ones_free() -> None:
    """A scale-up: the group's claim is met by its running allocation, so the new one may take
    any volume of the name (and claims it)."""
    nodes, j = _three_nodes(), _sticky_job(count=2)
    running = alloc(j, nodes[1])
    snap = _with_claims(snapshot(j, nodes, [running]), _claim(j, nodes[1], running.id))
    homes = {placed(run(snap, key=key))[0].node_name for key in KEYS}
    assert homes - {"b"}


def test_two_unmet_claims_each_take_one_replacement() -> None:
    nodes, j = _three_nodes(), _sticky_job(count=2)
    gone = [
        alloc(j, nodes[0], 0, desired="stop", client="complete"),
        alloc(j, nodes[2], 1, desired="stop", client="complete"),
    ]
    snap = _with_claims(snapshot(j, nodes, gone), _claim(j, nodes[0], gone[0].id), _claim(j, nodes[2], gone[1].id))
    for key in KEYS[:4]:
        assert sorted(a.node_name for a in placed(run(snap, key=key))) == ["a", "c"]


def test_a_sticky_ask_never_takes_a_static_volume() -> None:
    nodes = [dataclasses.replace(node("static"), host_volumes={"data": False})]
    result = run(snapshot(_sticky_job(), nodes))
    assert not placed(result)
    assert result.failed_tg_allocs["g"].constraint_filtered == {MISSING_HOST_VOLUMES: 1}
