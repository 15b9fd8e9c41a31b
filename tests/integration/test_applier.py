"""The plan applier's transaction: per-node re-check with the shared fit function, partial
commits, AllAtOnce, and fencing by evaluation token and by leader term."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.leadership import Leadership
from app.pipeline import plans
from app.pipeline.plan_apply.applier import Deposed
from app.structs import Allocation, AllocationStop, Plan, Resources
from tests.support.pipeline import alloc, apply, claim, register, submit
from tests.support.rows import insert_node, pairs

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_partial_commit_rejects_only_the_full_node(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    roomy, full = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="full")
    plan = Plan(
        held.evaluation.id,
        50,
        0,
        node_allocation={
            uuid.UUID(roomy): (alloc(held, roomy, 0), alloc(held, roomy, 1)),
            uuid.UUID(full): (alloc(held, full, 2), alloc(held, full, 3)),
        },
    )
    plan_id = submit(engine, held, plan)
    assert apply(*term) == plan_id
    result = plans.result(engine, plan_id)
    assert result is not None and result.placed == 2 and result.rejected_nodes == 1 and result.partial
    usage = pairs(pg.execute("SELECT n.name, u.cpu FROM node_usage u JOIN nodes n ON n.id = u.node_id").fetchall())
    assert usage == {"roomy": 1000}
    assert apply(*term) is None


def test_all_at_once_commits_nothing_when_one_node_fails(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    roomy, full = insert_node(pg, cpu=2000), insert_node(pg, cpu=100)
    plan = Plan(
        held.evaluation.id,
        50,
        0,
        all_at_once=True,
        node_allocation={uuid.UUID(roomy): (alloc(held, roomy, 0),), uuid.UUID(full): (alloc(held, full, 1),)},
    )
    plan_id = submit(engine, held, plan)
    apply(*term)
    result = plans.result(engine, plan_id)
    assert result is not None and result.placed == 0 and result.rejected_nodes == 2
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)


def test_plan_of_a_lost_lease_is_refused(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg)
    plan_id = submit(
        engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    )
    pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid()")  # another worker took it over
    apply(*term)
    result = plans.result(engine, plan_id)
    assert result is not None and result.fenced
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)


def test_a_deposed_applier_cannot_commit(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg)
    submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)}))
    pg.execute("UPDATE leader_terms SET term = term + 1 WHERE role = 'applier'")
    with pytest.raises(Deposed):
        apply(*term)
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    assert pg.execute("SELECT status FROM plans").fetchone() == ("pending",)


def test_ineligible_and_down_nodes(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg, cpu=2000)
    first = alloc(held, node, 0)
    submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (first,)}), attempt=1)
    apply(*term)
    pg.execute("UPDATE nodes SET scheduling_eligibility = 'ineligible'")
    bigger = Allocation(**{**first.__dict__, "resources": Resources(cpu=900, memory_mb=64, disk_mb=10)})
    plan = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (bigger, alloc(held, node, 1))})
    rejected = submit(engine, held, plan, attempt=2)
    apply(*term)
    rejected_result = plans.result(engine, rejected)
    assert rejected_result is not None and rejected_result.rejected_nodes == 1
    in_place = submit(
        engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (bigger,)}), attempt=3
    )
    apply(*term)
    in_place_result = plans.result(engine, in_place)
    assert in_place_result is not None and in_place_result.rejected_nodes == 0
    assert pg.execute("SELECT cpu FROM node_usage").fetchone() == (900,)
    pg.execute("UPDATE nodes SET status = 'down', scheduling_eligibility = 'eligible'")
    stop = Plan(
        held.evaluation.id,
        50,
        0,
        node_update={uuid.UUID(node): (AllocationStop(first.id, "stop", "node down", "lost"),)},
    )
    stopped = submit(engine, held, stop, attempt=4)
    apply(*term)
    stopped_result = plans.result(engine, stopped)
    assert stopped_result is not None and stopped_result.stopped == 1
    assert pg.execute("SELECT desired_status, client_status FROM allocations").fetchone() == ("stop", "lost")
    assert pg.execute("SELECT cpu, live_allocs FROM node_usage").fetchone() == (0, 0)


def test_resubmitting_the_same_attempt_is_idempotent(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg)
    plan = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    assert submit(engine, held, plan) == submit(engine, held, plan)
    assert pg.execute("SELECT count(*) FROM plans").fetchone() == (1,)


def test_plan_whose_lease_lapsed_is_refused(engine: Engine, pg: Conn, term: tuple[Leadership, int]) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg)
    plan_id = submit(
        engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    )
    pg.execute("UPDATE evaluations SET lease_expires_at = now() - interval '1 second'")  # same token, lapsed
    apply(*term)
    result = plans.result(engine, plan_id)
    assert result is not None and result.fenced
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)


def test_plan_the_database_refuses_is_rejected_not_retried_forever(
    engine: Engine, pg: Conn, term: tuple[Leadership, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.pipeline.plan_apply.plan_check as plan_check

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg, cpu=600)
    plan = Plan(
        held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0), alloc(held, node, 1))}
    )
    plan_id = submit(engine, held, plan)
    # A broken fit check lets an overcommit through.
    monkeypatch.setattr(plan_check, "exhausted_dimension", lambda *args: None)
    assert apply(*term) == plan_id
    result = plans.result(engine, plan_id)
    assert result is not None and result.placed == 0 and result.rejected_nodes == 1 and result.partial
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    assert apply(*term) is None  # the queue moved on


def test_a_plan_submission_takes_no_index_and_its_result_stamps_no_plans(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    """No blocking query watches plans: submitting one logs nothing in the state index, and the
    applier logs only the tables its result changed."""
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg, cpu=2000)
    logged = "SELECT count(*) FROM state_index"
    before = pg.execute(logged).fetchone()
    plan_id = submit(
        engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    )
    assert pg.execute(logged).fetchone() == before
    assert apply(*term) == plan_id
    stamped = pg.execute("SELECT name FROM state_index WHERE value = (SELECT max(value) FROM state_index)").fetchall()
    assert sorted(str(name) for (name,) in stamped) == ["allocations", "evaluations"]
