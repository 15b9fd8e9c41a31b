"""The applier's side of preemption: victims re-checked in the same transaction, evicted
before the preemptor is inserted (so the usage triggers see the room), linked both ways, and
one `preemption` evaluation per job that lost work."""

from __future__ import annotations

import dataclasses
import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.leadership import Leadership
from app.pipeline import broker
from app.structs import AllocationStop, Plan
from tests.support.pipeline import alloc, apply, claim, register, submit
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def setup(engine: Engine, pg: Conn) -> tuple[str, str, broker.Claim]:
    low_eval = register(engine, "low", priority=20)
    node = insert_node(pg, cpu=1000)
    victim = insert_allocation(pg, node, low_eval, job_id="low", cpu=1000)
    register(engine, "web", priority=80)
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == "web"
    return node, victim, held


def preempting_plan(held: broker.Claim, node: str, victim: str) -> Plan:
    new = dataclasses.replace(alloc(held, node, 0, cpu=600), preempted_allocations=(uuid.UUID(victim),))
    stop = AllocationStop(uuid.UUID(victim), "evict", f"Preempted by alloc ID {new.id}", preempted_by=new.id)
    return Plan(
        held.evaluation.id,
        80,
        0,
        node_allocation={uuid.UUID(node): (new,)},
        node_preemptions={uuid.UUID(node): (stop,)},
    )


def test_preemption_is_recorded_with_links_usage_and_one_eval_per_job(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    node, victim, held = setup(engine, pg)
    plan = preempting_plan(held, node, victim)
    [new] = plan.node_allocation[uuid.UUID(node)]
    plan_id = submit(engine, held, plan)
    assert apply(*term) == plan_id

    row = pg.execute(
        "SELECT desired_status, desired_description, preempted_by_allocation FROM allocations WHERE id = %s", (victim,)
    ).fetchone()
    assert row == ("evict", f"Preempted by alloc ID {new.id}", new.id)
    assert pg.execute("SELECT preempted_allocations FROM allocations WHERE id = %s", (new.id,)).fetchone() == (
        [uuid.UUID(victim)],
    )
    assert pg.execute("SELECT cpu FROM node_usage WHERE node_id = %s", (node,)).fetchone() == (600,)
    evals = pg.execute(
        "SELECT job_id, type, priority, status FROM evaluations WHERE triggered_by = 'preemption'"
    ).fetchall()
    assert evals == [("low", "service", 20, "pending")]
    recorded = pg.execute("SELECT node_preemptions FROM plan_results WHERE plan_id = %s", (plan_id,)).fetchone()
    assert recorded == ({node: [victim]},)


def test_a_victim_that_is_no_longer_live_rejects_the_node(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    node, victim, held = setup(engine, pg)
    plan = preempting_plan(held, node, victim)
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (victim,))
    plan_id = submit(engine, held, plan)
    apply(*term)
    row = pg.execute("SELECT status FROM plans WHERE id = %s", (plan_id,)).fetchone()
    assert row == ("rejected",)
    assert pg.execute("SELECT count(*) FROM allocations WHERE job_id = 'web'").fetchone() == (0,)
    assert pg.execute("SELECT desired_status FROM allocations WHERE id = %s", (victim,)).fetchone() == ("run",)
    assert pg.execute("SELECT count(*) FROM evaluations WHERE triggered_by = 'preemption'").fetchone() == (0,)
