"""The deployments plans create and advance, as the batched applier writes them: a new one as
planned, a stored one merged (operator- and watcher-owned fields kept), an ended one untouched,
status updates (a success marks the job version stable), several plans of one batch naming the
same deployment, and a plan the database refuses taking its deployment writes with it."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.leadership import Leadership
from app.pipeline import broker
from app.pipeline.plan_apply.applier import apply_batch
from app.structs import Deployment, DeploymentGroup, DeploymentStatusUpdate, Plan
from tests.support.pipeline import alloc, claim, register, submit
from tests.support.rows import group_state, insert_deployment, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def batch(term: tuple[Leadership, int]) -> list[int]:
    lead, number = term
    with Session(bind=lead.connection) as session, session.begin():
        return apply_batch(session, number, 64)


def claimed(engine: Engine, job_id: str) -> broker.Claim:
    register(engine, job_id)
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == job_id
    return held


def planned(job_id: str, deployment_id: uuid.UUID | None = None, **groups: DeploymentGroup) -> Deployment:
    return Deployment(
        id=deployment_id or uuid.uuid4(),
        namespace="default",
        job_id=job_id,
        job_version=0,
        job_create_index=7,
        status="running",
        status_description="Deployment is running",
        groups=groups or {"g": DeploymentGroup(desired_total=1)},
        job_modify_index=9,
        eval_priority=60,
    )


def stored(pg: Conn, deployment_id: uuid.UUID | str) -> dict[str, Any]:
    row = pg.execute(
        "SELECT status, status_description, task_groups, create_index, modify_index, job_modify_index, "
        "job_spec_modify_index, job_create_index, eval_priority FROM deployments WHERE id = %s",
        (deployment_id,),
    ).fetchone()
    assert row is not None
    keys = (
        *("status", "description", "groups", "create_index", "modify_index", "job_modify_index"),
        *("job_spec_modify_index", "job_create_index", "eval_priority"),
    )
    return dict(zip(keys, row, strict=True))


def index_of(pg: Conn, plan_id: int) -> int:
    row = pg.execute("SELECT alloc_index FROM plan_results WHERE plan_id = %s", (plan_id,)).fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


def test_a_plans_new_deployment_is_created_as_planned_with_its_allocations(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    node = insert_node(pg)
    held = claimed(engine, "web")
    deployment = planned("web")
    placed = replace(alloc(held, node, 0), deployment_id=deployment.id)
    plan_id = submit(
        engine,
        held,
        Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (placed,)}, deployment=deployment),
    )
    batch(term)
    index = index_of(pg, plan_id)
    row = stored(pg, deployment.id)
    assert row == {
        "status": "running",
        "description": "Deployment is running",
        "groups": {"g": group_state(DesiredTotal=1)},
        "create_index": index,
        "modify_index": index,
        "job_modify_index": 9,
        "job_spec_modify_index": 9,
        "job_create_index": 7,
        "eval_priority": 60,
    }
    assert pg.execute("SELECT deployment_id FROM allocations").fetchone() == (deployment.id,)


def test_a_stored_deployment_takes_new_groups_and_more_canaries_and_keeps_what_others_own(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    held = claimed(engine, "web")
    kept = group_state(Promoted=True, RequireProgressBy=123, DesiredCanaries=2, DesiredTotal=3)
    grown = group_state(DesiredCanaries=1, DesiredTotal=2)
    dep = insert_deployment(pg, groups={"g": kept, "h": grown}, description="old words")
    groups = {
        "g": DeploymentGroup(desired_canaries=1, desired_total=5),  # fewer canaries: the stored 2 stay
        "h": DeploymentGroup(desired_canaries=2, desired_total=9),  # more: taken, the rest kept
        "new": DeploymentGroup(desired_total=4),
    }
    plan_id = submit(engine, held, Plan(held.evaluation.id, 50, 0, deployment=planned("web", uuid.UUID(dep), **groups)))
    batch(term)
    row = stored(pg, dep)
    assert row["groups"] == {
        "g": kept,
        "h": {**grown, "DesiredCanaries": 2},
        "new": group_state(DesiredTotal=4),
    }
    assert row["description"] == "Deployment is running"  # running: the plan's description
    assert (row["create_index"], row["modify_index"]) == (100, index_of(pg, plan_id))


def test_an_unchanged_deployment_is_not_rewritten(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    held = claimed(engine, "web")
    dep = insert_deployment(pg, groups={"g": group_state(DesiredTotal=1)})
    submit(engine, held, Plan(held.evaluation.id, 50, 0, deployment=planned("web", uuid.UUID(dep))))
    batch(term)
    assert stored(pg, dep)["modify_index"] == 100


def test_a_paused_deployment_keeps_its_description(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    held = claimed(engine, "web")
    dep = insert_deployment(pg, status="paused", description="Deployment is paused")
    submit(engine, held, Plan(held.evaluation.id, 50, 0, deployment=planned("web", uuid.UUID(dep))))
    batch(term)
    row = stored(pg, dep)
    assert (row["status"], row["description"]) == ("paused", "Deployment is paused")
    assert row["modify_index"] > 100  # the description differed: the row was written, as before


@pytest.mark.parametrize("ended", ["failed", "successful", "cancelled"])
def test_an_ended_deployment_is_left_alone(engine: Engine, pg: Conn, term: tuple[Leadership, int], ended: str) -> None:
    held = claimed(engine, "web")
    dep = insert_deployment(pg, status=ended, description="over", groups={"g": group_state()})
    update = DeploymentStatusUpdate(uuid.UUID(dep), "running", "again")
    grown = planned("web", uuid.UUID(dep), g=DeploymentGroup(desired_canaries=3), x=DeploymentGroup())
    plan = Plan(held.evaluation.id, 50, 0, deployment=grown, deployment_updates=(update,))
    submit(engine, held, plan)
    batch(term)
    row = stored(pg, dep)
    assert (row["status"], row["description"], row["groups"]) == (ended, "over", {"g": group_state()})
    assert row["modify_index"] == 100


def test_a_successful_deployment_marks_its_job_version_stable(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    held = claimed(engine, "web")
    dep = insert_deployment(pg)
    update = DeploymentStatusUpdate(uuid.UUID(dep), "successful", "Deployment completed successfully")
    plan_id = submit(engine, held, Plan(held.evaluation.id, 50, 0, deployment_updates=(update,)))
    batch(term)
    index = index_of(pg, plan_id)
    row = stored(pg, dep)
    assert (row["status"], row["description"], row["modify_index"]) == (
        "successful",
        "Deployment completed successfully",
        index,
    )
    assert pg.execute("SELECT stable, modify_index FROM jobs WHERE id = 'web'").fetchone() == (True, index)
    assert pg.execute("SELECT stable FROM job_versions WHERE job_id = 'web'").fetchall() == [(True,)]


def test_plans_of_one_batch_naming_one_deployment_build_on_each_other(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    first, second = claimed(engine, "web"), claimed(engine, "api")
    dep = uuid.uuid4()
    submit(engine, first, Plan(first.evaluation.id, 50, 0, deployment=planned("web", dep)))
    more = planned("web", dep, g=DeploymentGroup(desired_canaries=2, desired_total=1))
    pause = DeploymentStatusUpdate(dep, "paused", "Deployment is paused")
    submit(engine, second, Plan(second.evaluation.id, 50, 0, deployment=more, deployment_updates=(pause,)))
    assert len(batch(term)) == 2
    row = stored(pg, dep)
    assert row["groups"] == {"g": group_state(DesiredTotal=1, DesiredCanaries=2)}
    assert (row["status"], row["description"]) == ("paused", "Deployment is paused")


def test_a_refused_plan_takes_its_deployment_with_it_and_the_next_plan_builds_on_the_kept_ones(
    engine: Engine, pg: Conn, term: tuple[Leadership, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.pipeline.plan_apply.plan_check as plan_check

    roomy, small = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="small")
    good, bad, later = claimed(engine, "web"), claimed(engine, "api"), claimed(engine, "db")
    kept, lost = uuid.uuid4(), uuid.uuid4()
    submit(engine, good, Plan(good.evaluation.id, 50, 0, deployment=planned("web", kept)))
    overflow = {uuid.UUID(small): (alloc(bad, small, 0), alloc(bad, small, 1))}
    submit(engine, bad, Plan(bad.evaluation.id, 50, 0, node_allocation=overflow, deployment=planned("api", lost)))
    grown = planned("web", kept, g=DeploymentGroup(desired_canaries=1, desired_total=1))
    fits = {uuid.UUID(roomy): (alloc(later, roomy, 0),)}
    submit(engine, later, Plan(later.evaluation.id, 50, 0, node_allocation=fits, deployment=grown))
    # A broken fit check lets an overcommit through: the database refuses that plan's writes.
    monkeypatch.setattr(plan_check, "exhausted_dimension", lambda *args: None)
    batch(term)
    assert pg.execute("SELECT count(*) FROM deployments WHERE id = %s", (lost,)).fetchone() == (0,)
    assert stored(pg, kept)["groups"] == {"g": group_state(DesiredTotal=1, DesiredCanaries=1)}
    assert pg.execute("SELECT status FROM plans ORDER BY id").fetchall() == [
        ("applied",),
        ("rejected",),
        ("applied",),
    ]
