"""The applier's batched completion (sql/queries/applier.sql, complete_evals) finds the served
evaluations of each finished one through its job, whatever the planner's statistics say: right
after a burst of registrations (no ANALYZE yet) it walked every pending evaluation instead."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import Engine

from app.pipeline.plan_state import binary_ids
from tests.support.pipeline import claim, register

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
PENDING = 300


def test_completion_probes_the_finished_evaluations_jobs_not_every_pending_evaluation(engine: Engine, pg: Conn) -> None:
    for i in range(PENDING):
        register(engine, f"job-{i:03}")
    held = claim(engine)
    assert held is not None
    params = {
        "ids": [held.evaluation.id],
        "tokens": [held.token],
        "descriptions": [""],
        "snapshot_indexes": [10**12],
        "queued": [Jsonb({"g": 0})],
        "eligibility": [Jsonb({})],
        "escaped": [False],
        "scheduled_at": ["2100-01-01T00:00:00+00:00"],
    }
    with pg.transaction(force_rollback=True):
        rows = pg.execute("EXPLAIN (ANALYZE) " + binary_ids("complete_evals"), params).fetchall()
        plan = "\n".join(str(row[0]) for row in rows)
        status = pg.execute("SELECT status FROM evaluations WHERE id = %s", (held.evaluation.id,)).fetchone()
    assert status == ("complete",)
    assert "ix_evaluations_ready" not in plan and "ix_evaluations_pending_by_job" in plan, plan
