"""A blocked evaluation released by new capacity that still cannot place everything blocks
again and keeps its 'created to place remaining allocations' description (issue 23), as
Nomad's reblocked evaluation does."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import make_sessionmaker, transaction
from app.db.state_index import next_index
from app.pipeline import broker
from app.pipeline.broker import Outcome
from app.store.evaluation.blocked_evals import unblock_capacity
from app.structs import PlacementMetrics
from tests.support.pipeline import claim, register
from tests.support.rows import scalar

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
BLOCKED = "SELECT status, status_description FROM evaluations WHERE triggered_by = 'queued-allocs'"


def test_an_evaluation_that_blocks_again_keeps_its_description(engine: Engine, pg: Conn) -> None:
    failing = Outcome(snapshot_index=10**9, failed_tg_allocs={"g": PlacementMetrics()}, class_eligibility={})
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, failing)
    assert pg.execute(BLOCKED).fetchone() == ("blocked", "created to place remaining allocations")

    for _ in range(2):  # released by capacity, still unplaceable, blocked again: twice over
        with transaction(make_sessionmaker(engine)) as session:
            unblock_capacity(session, {uuid.uuid4(): "v1:new"}, next_index(session, ["evaluations"]))
        assert scalar(pg, BLOCKED) == "pending"
        held = claim(engine)
        assert held is not None and held.evaluation.triggered_by == "queued-allocs"
        with transaction(make_sessionmaker(engine)) as session:
            broker.complete(session, held, failing)
        assert pg.execute(BLOCKED).fetchone() == ("blocked", "created to place remaining allocations")
