"""The applier's fold of a batch's deployment changes (pure): created once, merged in plan order,
ended deployments untouched, successes marking their job version stable, and a failed write
leaving the state it started from."""

from __future__ import annotations

import uuid

import pytest

from app.pipeline.plan_apply.plan_deployments import Stored, deployment_ids, fold, settled
from app.structs import Deployment, DeploymentGroup, DeploymentStatusUpdate, Plan
from app.wire.deployment import DeploymentStatus
from app.wire.plan import DeploymentGroupJson
from tests.support.rows import group_state

pytestmark = pytest.mark.unit
DEP = uuid.UUID(int=1)


def plan(deployment: Deployment | None = None, *updates: DeploymentStatusUpdate) -> Plan:
    return Plan(uuid.uuid4(), 50, 0, deployment=deployment, deployment_updates=updates)


def planned(description: str = "Deployment is running", **groups: DeploymentGroup) -> Deployment:
    return Deployment(DEP, "default", "web", 3, 7, "running", description, groups or {"g": DeploymentGroup()})


def row(status: DeploymentStatus = "running", **groups: DeploymentGroupJson) -> Stored:
    return Stored("default", "web", 3, status, "Deployment is running", groups)


def group(**fields: object) -> DeploymentGroupJson:
    state: DeploymentGroupJson = group_state(**{"DesiredTotal": 0, **fields})
    return state


def test_ids_come_from_deployments_and_status_updates() -> None:
    other = uuid.UUID(int=2)
    plans = [plan(planned()), plan(None, DeploymentStatusUpdate(other, "failed", "x"))]
    assert deployment_ids(plans) == [DEP, other]


def test_a_deployment_is_created_once_and_later_plans_merge_into_it() -> None:
    more = planned(g=DeploymentGroup(desired_canaries=2))
    outcome = fold([plan(planned()), plan(more)], {})
    created = outcome.after[DEP]
    assert created.new and created.planned is not None
    assert created.task_groups == {"g": group(DesiredCanaries=2)}


def test_a_merge_keeps_every_stored_field_but_a_larger_canary_count() -> None:
    kept = group(Promoted=True, RequireProgressBy=5, DesiredCanaries=3, DesiredTotal=1)
    outcome = fold([plan(planned(g=DeploymentGroup(desired_canaries=1, desired_total=9)))], {DEP: row(g=kept)})
    assert outcome.after[DEP].task_groups == {"g": kept}
    assert not outcome.writes  # nothing changed: nothing to write


def test_an_ended_deployment_takes_neither_groups_nor_statuses() -> None:
    ended = {DEP: row("failed", g=group())}
    outcome = fold([plan(planned(h=DeploymentGroup()), DeploymentStatusUpdate(DEP, "running", "again"))], ended)
    assert outcome.after == ended and not outcome.writes and outcome.stable == []


def test_success_marks_the_version_stable_and_ends_the_deployment_for_later_plans() -> None:
    done = DeploymentStatusUpdate(DEP, "successful", "done")
    outcome = fold([plan(None, done), plan(planned(h=DeploymentGroup()))], {DEP: row(g=group())})
    assert outcome.stable == [("default", "web", 3)]
    assert outcome.after[DEP].status == "successful" and "h" not in outcome.after[DEP].task_groups


def test_the_fold_never_changes_the_state_it_starts_from() -> None:
    start = {DEP: row(g=group())}
    outcome = fold([plan(planned(h=DeploymentGroup()))], start)
    assert start == {DEP: row(g=group())} and outcome.after[DEP].changed
    assert settled(outcome)[DEP] == Stored(
        "default",
        "web",
        3,
        "running",
        "Deployment is running",
        {
            "g": group(),
            "h": group(),
        },
    )
