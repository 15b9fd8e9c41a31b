"""`alloc stop` (DesiredTransition.Migrate on a healthy, eligible node): the scheduler stops the
allocation and places one replacement, leaves its siblings alone, and settles afterwards."""

from __future__ import annotations

import pytest

from app.scheduler import reasons
from app.scheduler.reconcile import ReconcileContext, reconcile_group
from tests.support.scheduler_harness import NOW, alloc, apply, group, job, live, node, placed, run, snapshot, stopped

pytestmark = pytest.mark.unit


def test_a_stop_requested_allocation_is_stopped_and_replaced_under_its_name() -> None:
    n = node("only")
    j = job(groups=[group(count=2)])
    asked = alloc(j, n, 0, desired_transition={"Migrate": True})
    sibling = alloc(j, n, 1)
    result = run(snapshot(j, [n], [asked, sibling]))
    assert set(stopped(result)) == {asked.id}
    assert stopped(result)[asked.id].description == reasons.MIGRATING
    (new,) = placed(result)
    # One node: the replacement may land where the original ran (it is eligible).
    assert new.previous_allocation == asked.id and new.name == asked.name and new.node_id == n.id
    assert not new.desired_transition.get("Migrate")


def test_after_the_stop_commits_the_job_is_settled() -> None:
    nodes = [node("a"), node("b")]
    j = job(groups=[group(count=2)])
    existing = [alloc(j, nodes[0], 0, desired_transition={"Migrate": True}), alloc(j, nodes[1], 1)]
    snap = snapshot(j, nodes, existing)
    after = apply(snap, run(snap))
    assert sorted(a.name for a in live(after)) == [f"{j.id}.{j.task_groups[0].name}[{i}]" for i in range(2)]
    assert run(after, key="e2").plan.is_noop


def test_reconciler_classifies_a_stop_request_as_migrate_not_as_surplus() -> None:
    n = node("a")
    j = job(groups=[group(count=1)])
    asked = alloc(j, n, 0, desired_transition={"Migrate": True})
    ctx = ReconcileContext(nodes={n.id: n}, batch=False, now_ns=NOW, job=j, old_jobs={}, node_accepts=lambda _: True)
    changes = reconcile_group(j.task_groups[0], [asked], ctx)
    assert [(s.alloc.id, s.description, s.client_status) for s in changes.stops] == [
        (asked.id, reasons.MIGRATING, None)
    ]
    assert [(p.name, p.previous) for p in changes.placements] == [(asked.name, asked)]


def test_a_stopped_allocation_already_terminal_is_not_replaced_twice() -> None:
    n = node("a")
    j = job(groups=[group(count=1)])
    old = alloc(j, n, 0, desired="stop", desired_transition={"Migrate": True})
    replacement = alloc(j, n, 0, key="new", previous_allocation=old.id)
    assert run(snapshot(j, [n], [old, replacement])).plan.is_noop
