"""The applier's batched statements (sql/queries/applier.sql) reach their rows through indexes
whatever the planner's statistics say: complete_evals, which reads each completion from its
plan's row, finds each finished evaluation by its key and the evaluations it served through its
job; plan_record_status finds the batch's plans by key. Right after a burst of registrations or
submits (no ANALYZE yet) they walked every pending evaluation, or every plan, instead."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import Engine

from app.pipeline.plan_apply.applier import COMPLETE_EVALS
from app.store.sql import psycopg_query
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
    assert "Seq Scan on evaluations" not in plan, plan


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_recording_a_batchs_statuses_probes_its_plans_not_the_whole_table(
    engine: Engine, pg: Conn, plan_cache_mode: str
) -> None:
    """plan_record_status, joined on its unnest alone, read every plan of a table never
    analyzed (a burst of submits): 1 ms a batch at 3,000 plans. So in the generic plan too,
    which the applier's prepared statement uses after its first executions."""
    register(engine, "job-000")
    held = claim(engine)
    assert held is not None
    with pg.transaction(force_rollback=True):
        ids = [
            row[0]
            for row in pg.execute(
                "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, "
                "snapshot_index, node_update, node_allocation, node_preemptions, deployment_updates) "
                "SELECT %s, %s, a, 'default', %s, 50, false, 0, '{}', '{}', '{}', '[]' FROM generate_series(1, %s) a "
                "RETURNING id",
                (held.evaluation.id, held.token, held.evaluation.job_id, PENDING),
            ).fetchall()
        ]
        verdicts = ",".join(f"{plan_id}:1:0:0:0:" for plan_id in ids[-3:])
        batch = {"ids": ids[-3:], "statuses": ["applied"] * 3, "verdicts": verdicts}
        pg.execute(f"SET LOCAL plan_cache_mode = {plan_cache_mode}")
        rows = pg.execute("EXPLAIN (ANALYZE) " + psycopg_query("plan_record_status"), batch).fetchall()
        plan = "\n".join(str(row[0]) for row in rows)
        statuses = pg.execute("SELECT status FROM plans WHERE id = ANY(%s) ORDER BY id", (ids[-4:],)).fetchall()
    assert statuses == [("pending",), ("applied",), ("applied",), ("applied",)]
    assert "Seq Scan on plans" not in plan and "pk_plans" in plan, plan
