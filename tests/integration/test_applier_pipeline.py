"""The applier's pipeline on a real database: batch N+1 is checked on a connection of its own,
in one snapshot, while batch N is written but not yet committed on the term holder's connection.
N's effects are laid over N+1's read exactly when that read does not see N, and a lease that
moves on between a batch's check and its write fences the plan instead of writing it (and
refuses the plans checked after it that may have used the room it would have freed)."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import libpq_url
from app.db.leadership import Leadership
from app.pipeline import broker, plans
from app.pipeline.plan_apply.applier import InFlight, Prepared, commit_batch, prepare
from app.pipeline.plan_apply.plan_overlay import Effects
from app.pipeline.snapshot import BEGIN_SNAPSHOT
from app.settings.config import Settings
from app.structs import AllocationStop, Plan, Port
from tests.support.pipeline import alloc, claim, register, submit
from tests.support.processes import wait_for
from tests.support.rows import insert_node, pairs

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def reader(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        yield conn


def checked(reader: psycopg.Connection[Any], limit: int, in_flight: list[InFlight]) -> Prepared:
    """A batch read and checked as the pipeline's reader does: one REPEATABLE READ snapshot."""
    reader.execute(BEGIN_SNAPSHOT)
    try:
        prepared = prepare(reader, limit, in_flight)
    finally:
        reader.execute("COMMIT")
    assert prepared is not None
    return prepared


def planned(engine: Engine, job_id: str, node: str, cpu: int) -> tuple[broker.Claim, int]:
    register(engine, job_id)
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == job_id
    plan = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0, cpu=cpu),)})
    return held, submit(engine, held, plan)


def accepted(prepared: Prepared) -> list[bool]:
    return [bool(c.verdict.accepted) for c in prepared.checked]


def in_flight(prepared: Prepared) -> InFlight:
    return InFlight(prepared.plan_ids, prepared.effects)


def test_an_uncommitted_batch_is_laid_over_the_next_batchs_read(
    engine: Engine, pg: Conn, lead: Leadership, reader: psycopg.Connection[Any]
) -> None:
    node = insert_node(pg, cpu=1000)
    _, first_id = planned(engine, "first", node, cpu=600)
    _, second_id = planned(engine, "second", node, cpu=600)  # each fits alone, not together
    first = checked(reader, 1, [])
    assert first.plan_ids == [first_id] and accepted(first) == [True]
    assert lead.term is not None
    with Session(bind=lead.connection) as session, session.begin():
        commit_batch(session, lead.term, first)  # written, and not committed while N+1 is checked
        # The read cannot see the first batch: without its effects the second plan would fit.
        unaware = checked(reader, 1, [InFlight(first.plan_ids, Effects({}, {}))])
        assert unaware.plan_ids == [second_id] and accepted(unaware) == [True]
        second = checked(reader, 1, [in_flight(first)])
        assert second.plan_ids == [second_id]
        assert accepted(second) == [False]
    with Session(bind=lead.connection) as session, session.begin():
        commit_batch(session, lead.term, second)
    refused = plans.result(engine, second_id)
    assert refused is not None and refused.placed == 0 and refused.partial
    assert pg.execute("SELECT cpu FROM node_usage").fetchone() == (600,)


def test_a_committed_batch_is_not_laid_over_a_read_that_sees_it(
    engine: Engine, pg: Conn, lead: Leadership, reader: psycopg.Connection[Any]
) -> None:
    node = insert_node(pg, cpu=1000)
    _, first_id = planned(engine, "first", node, cpu=400)
    _, second_id = planned(engine, "second", node, cpu=400)  # both fit; counted twice, the first would not
    first = checked(reader, 1, [])
    assert lead.term is not None
    with Session(bind=lead.connection) as session, session.begin():
        commit_batch(session, lead.term, first)
    # The writer committed before the reader's snapshot: the read sees the first batch's 400.
    second = checked(reader, 1, [in_flight(first)])
    assert second.plan_ids == [second_id] and accepted(second) == [True]
    with Session(bind=lead.connection) as session, session.begin():
        assert commit_batch(session, lead.term, second) == [second_id]
    result = plans.result(engine, second_id)
    assert result is not None and result.placed == 1 and not result.partial
    assert pg.execute("SELECT cpu FROM node_usage").fetchone() == (800,)
    assert plans.result(engine, first_id) is not None


def test_a_lease_lost_between_the_check_and_the_write_fences_the_plan(
    engine: Engine, pg: Conn, lead: Leadership, reader: psycopg.Connection[Any]
) -> None:
    node = insert_node(pg, cpu=1000)
    held, plan_id = planned(engine, "late", node, cpu=100)
    prepared = checked(reader, 64, [])
    assert accepted(prepared) == [True]
    pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid() WHERE id = %s", (held.evaluation.id,))
    assert lead.term is not None
    with Session(bind=lead.connection) as session, session.begin():
        assert commit_batch(session, lead.term, prepared) == [plan_id]
    assert pg.execute("SELECT status FROM plans WHERE id = %s", (plan_id,)).fetchone() == ("rejected",)
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    assert pg.execute("SELECT count(*) FROM node_usage WHERE cpu > 0").fetchone() == (0,)


def test_plans_that_used_room_freed_by_a_plan_fenced_since_the_check_are_refused(
    engine: Engine, pg: Conn, lead: Leadership, reader: psycopg.Connection[Any]
) -> None:
    """Host ports have no database backstop: a plan checked after a stop whose lease then moved
    on must not take the port the stop would have freed."""
    node = insert_node(pg, cpu=1000)
    old = placed_with_port(engine, "old", node)
    assert lead.term is not None
    with Session(bind=lead.connection) as session, session.begin():
        commit_batch(session, lead.term, checked(reader, 64, []))
    broker.complete_success(engine, old[0], broker.Outcome(snapshot_index=0))
    register(engine, "old")  # a new evaluation of the same job stops the allocation
    stopper = claim(engine)
    assert stopper is not None and stopper.evaluation.job_id == "old"
    stop = Plan(
        stopper.evaluation.id, 50, 0, node_update={uuid.UUID(node): (AllocationStop(old[1], "stop", "job stopped"),)}
    )
    stop_id = submit(engine, stopper, stop)
    _, _, newcomer_id = placed_with_port(engine, "new", node)
    prepared = checked(reader, 64, [])
    assert prepared.plan_ids == [stop_id, newcomer_id]
    assert [c.verdict.writes and not c.verdict.rejected for c in prepared.checked] == [True, True]
    pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid() WHERE id = %s", (stopper.evaluation.id,))
    with Session(bind=lead.connection) as session, session.begin():
        assert commit_batch(session, lead.term, prepared) == [newcomer_id, stop_id]
    statuses = pairs(pg.execute("SELECT id, status FROM plans WHERE id IN (%s, %s)", (stop_id, newcomer_id)).fetchall())
    assert statuses == {stop_id: "rejected", newcomer_id: "rejected"}
    refused = plans.result(engine, newcomer_id)
    assert refused is not None and refused.placed == 0 and refused.rejected_nodes == 1
    live = pg.execute("SELECT id FROM allocations WHERE desired_status = 'run' AND 8080 = ANY(host_ports)").fetchall()
    assert live == [(old[1],)]


def placed_with_port(engine: Engine, job_id: str, node: str) -> tuple[broker.Claim, uuid.UUID, int]:
    """A claimed evaluation of a new job with a submitted plan placing one allocation that takes
    host port 8080 on `node`; the claim, the allocation's ID and the plan's."""
    register(engine, job_id)
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == job_id
    placed = replace(alloc(held, node, 0, cpu=100), ports=(Port("http", 8080),))
    plan_id = submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (placed,)}))
    return held, placed.id, plan_id


def test_the_running_applier_pipelines_a_deep_queue_without_overcommitting_cpu_or_ports(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The role itself (`run_applier`), pipelined, on a queue of plans that fight over cpu and
    host ports: every plan is decided, the pipeline's writer did the writing, and no node holds
    more than its cpu or one live allocation per port."""
    from workers import applier as applier_module

    commits: list[int] = []
    real_commit = applier_module._commit

    def counted(lead: Leadership, prepared: Prepared) -> list[int]:
        commits.append(len(prepared.pending))
        return real_commit(lead, prepared)

    monkeypatch.setattr(applier_module, "_commit", counted)
    rng = random.Random(21)
    nodes = [insert_node(pg, cpu=1000, name=f"n{i}") for i in range(12)]
    plan_ids = []
    for i in range(160):
        register(engine, f"job-{i}")
        held = claim(engine)
        assert held is not None
        node = rng.choice(nodes)
        placed = replace(alloc(held, node, 0, cpu=300), ports=(Port("http", 8080 + rng.randrange(4)),))
        plan_ids.append(
            submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (placed,)}))
        )
    settings = Settings(database_url=database_url, poll_interval_s=0.1, applier_pipeline=True, applier_batch=24)
    stop = threading.Event()
    thread = threading.Thread(target=applier_module.run_applier, args=(settings, database_url, stop), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: pg.execute("SELECT count(*) FROM plan_results").fetchone() == (len(plan_ids),), 120)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert sum(commits) > 0 and len(commits) >= 2  # batches went through the pipeline's writer
    over = pg.execute(
        "SELECT node_id FROM allocations WHERE desired_status = 'run' GROUP BY node_id HAVING sum(cpu) > 1000"
    ).fetchall()
    collisions = pg.execute(
        "SELECT node_id, port FROM allocations, unnest(host_ports) AS port WHERE desired_status = 'run' "
        "GROUP BY node_id, port HAVING count(*) > 1"
    ).fetchall()
    assert over == [] and collisions == []
    total = pg.execute("SELECT count(*) FROM allocations").fetchone()
    assert total is not None and 12 <= int(str(total[0])) <= 12 * 3  # every node got work, none over 3
