"""System and sysbatch jobs: one allocation per feasible ready node."""

from __future__ import annotations

import dataclasses

import pytest

from app.scheduler import reasons
from app.structs import Constraint
from app.wire.job import JobType
from tests.support.scheduler_harness import alloc, apply, group, job, live, node, placed, run, snapshot, stopped, task

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", ["system", "sysbatch"])
def test_one_allocation_per_ready_node(kind: JobType) -> None:
    nodes = [
        node("a"),
        node("b"),
        node("down", status="down"),
        node("inel", eligibility="ineligible"),
        node("drain", draining=True),
        node("other-dc", dc="dc9"),
        node("linux-not", attrs={"kernel.name": "windows"}),
    ]
    j = job("agent", type=kind, datacenters=("dc1",), constraints=(Constraint("${attr.kernel.name}", "=", "linux"),))
    result = run(snapshot(j, nodes))
    assert sorted(a.node_name for a in placed(result)) == ["a", "b"]
    assert {a.name for a in placed(result)} == {"agent.g[0]"}
    assert not result.failed_tg_allocs  # filtered nodes are not failures
    assert not result.blocked_nodes  # nor anything a blocked evaluation waits on
    after = apply(snapshot(j, nodes), result)
    assert run(after, key="again").plan.is_noop


def test_system_exhausted_node_is_a_failure() -> None:
    nodes = [node("a"), node("tiny", cpu=50), node("tiny2", cpu=50)]
    j = job("agent", type="system", groups=[group(tasks=[task(cpu=100)])])
    result = run(snapshot(j, nodes))
    assert [a.node_name for a in placed(result)] == ["a"]
    metrics = result.failed_tg_allocs["g"]
    assert metrics.nodes_exhausted == 1 and metrics.coalesced_failures == 1
    assert result.queued_allocations == {"g": 2}
    # The blocked evaluation waits on the full nodes only: capacity elsewhere cannot help.
    assert result.blocked_nodes == {nodes[1].id, nodes[2].id}


def test_lost_allocations_are_not_replaced_elsewhere() -> None:
    up, down = node("up"), node("down", status="down")
    j = job("agent", type="system")
    existing = [alloc(j, up), alloc(j, down)]
    result = run(snapshot(j, [up, down], existing))
    assert stopped(result)[existing[1].id].client_status == "lost"
    assert not placed(result)


def test_stops_on_nodes_that_became_infeasible_or_left_scope() -> None:
    n1, n2, n3 = node("a"), node("b", attrs={"kernel.name": "windows"}), node("c", dc="dc2")
    j = job(
        "agent", type="system", datacenters=("dc1",), constraints=(Constraint("${attr.kernel.name}", "=", "linux"),)
    )
    existing = [alloc(j, n1), alloc(j, n2), alloc(j, n3)]
    stops = stopped(run(snapshot(j, [n1, n2, n3], existing)))
    assert stops[existing[1].id].description == reasons.NODE_INFEASIBLE
    assert stops[existing[2].id].description == reasons.NODE_TAINTED
    assert existing[0].id not in stops


def test_ineligible_node_keeps_its_allocation_and_migrate_stops() -> None:
    inel, drain = node("inel", eligibility="ineligible"), node("drain", draining=True)
    j = job("agent", type="system")
    existing = [alloc(j, inel), alloc(j, drain, desired_transition={"Migrate": True})]
    result = run(snapshot(j, [inel, drain], existing))
    assert set(stopped(result)) == {existing[1].id} and not placed(result)


def test_duplicates_on_one_node_are_stopped() -> None:
    n = node("a")
    j = job("agent", type="system")
    existing = [alloc(j, n, key="1", create_index=1), alloc(j, n, key="2", create_index=2)]
    assert set(stopped(run(snapshot(j, [n], existing)))) == {existing[1].id}


def test_sysbatch_completed_is_not_rerun_but_system_failed_is() -> None:
    n = node("a")
    sb = job("agent", type="sysbatch")
    assert run(snapshot(sb, [n], [alloc(sb, n, client="complete")])).plan.is_noop
    sys = job("agent", type="system")
    failed = alloc(sys, n, client="failed")
    (new,) = placed(run(snapshot(sys, [n], [failed])))
    assert new.previous_allocation == failed.id


def test_system_in_place_and_destructive_updates() -> None:
    n1, n2 = node("a"), node("b")
    old = job("agent", type="system")
    inplace = dataclasses.replace(old, version=1, priority=80)
    result = run(snapshot(inplace, [n1], [alloc(old, n1)], versions=[old]))
    (updated,) = placed(result)
    assert updated.job_version == 1 and not stopped(result)
    destructive = job("agent", type="system", groups=[group(tasks=[task(driver="raw_exec")])], version=1)
    existing = alloc(old, n2)
    result = run(snapshot(destructive, [n2], [existing], versions=[old]))
    (replacement,) = placed(result)
    assert replacement.id != existing.id and replacement.node_id == n2.id
    assert stopped(result)[existing.id].description == reasons.UPDATING
    assert len(live(apply(snapshot(destructive, [n2], [existing], versions=[old]), result))) == 1


def test_stopped_system_job_stops_everything() -> None:
    n = node("a")
    j = job("agent", type="system")
    stopped_job = dataclasses.replace(j, stop=True)
    assert set(stopped(run(snapshot(stopped_job, [n], [alloc(j, n)])))) == {alloc(j, n).id}
