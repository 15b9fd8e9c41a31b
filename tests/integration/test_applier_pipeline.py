"""The applier's pipeline on a real database: batch N+1 is checked on a connection of its own,
in one snapshot, while batch N is written but not yet committed on the term holder's connection.
N's effects are laid over N+1's read exactly when that read does not see N, and a lease that
moves on between a batch's check and its write fences the plan instead of writing it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import libpq_url
from app.db.leadership import Leadership
from app.pipeline import broker, plans
from app.pipeline.applier import InFlight, Prepared, commit_batch, prepare
from app.pipeline.plan_overlay import Effects
from app.pipeline.snapshot import BEGIN_SNAPSHOT
from app.structs import Plan
from tests.support.pipeline import alloc, claim, register, submit
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def lead(engine: Engine) -> Iterator[Leadership]:
    holder = Leadership(engine, "applier")
    assert holder.try_acquire() and holder.term is not None
    yield holder
    holder.close()


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
        unaware = checked(reader, 1, [InFlight(first.plan_ids, Effects({}, {}, {}))])
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
