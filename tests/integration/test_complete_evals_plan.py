"""The applier's batched completion (sql/queries/applier.sql, complete_evals), which reads each
completion from its plan's row, finds the served evaluations of each finished one through its
job, whatever the planner's statistics say: right after a burst of registrations (no ANALYZE yet)
it walked every pending evaluation instead."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import Engine

from app.pipeline.applier import COMPLETE_EVALS
from tests.support.pipeline import claim, register

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
PENDING = 300


def test_completion_probes_the_finished_evaluations_jobs_not_every_pending_evaluation(engine: Engine, pg: Conn) -> None:
    for i in range(PENDING):
        register(engine, f"job-{i:03}")
    held = claim(engine)
    assert held is not None
    completion = {
        "Description": "",
        "SnapshotIndex": 10**12,
        "QueuedAllocations": {"g": 0},
        "ClassEligibility": {},
        "EscapedComputedClass": False,
        "ScheduledAt": "2100-01-01T00:00:00+00:00",
    }
    with pg.transaction(force_rollback=True):
        submitted = pg.execute(
            "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, "
            "snapshot_index, node_update, node_allocation, node_preemptions, deployment_updates, completion) "
            "VALUES (%s, %s, 1, 'default', %s, 50, false, 0, '{}', '{}', '{}', '[]', %s) RETURNING id",
            (held.evaluation.id, held.token, held.evaluation.job_id, Jsonb(completion)),
        ).fetchone()
        assert submitted is not None
        rows = pg.execute("EXPLAIN (ANALYZE) " + COMPLETE_EVALS, {"plans": [submitted[0]]}).fetchall()
        plan = "\n".join(str(row[0]) for row in rows)
        status = pg.execute("SELECT status FROM evaluations WHERE id = %s", (held.evaluation.id,)).fetchone()
    assert status == ("complete",)
    assert "ix_evaluations_ready" not in plan and "ix_evaluations_pending_by_job" in plan, plan
