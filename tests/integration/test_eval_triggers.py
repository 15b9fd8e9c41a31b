"""Triggers that need a scheduling pass in the loop: a worker whose plans are rejected without
progress gives up after Nomad's attempt limit with a blocked `max-plan-attempts` evaluation."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from app.db.leadership import Leadership
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from tests.support.pipeline import claim, register
from tests.support.rows import insert_node
from workers.worker import ATTEMPTS, Worker

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_plans_rejected_without_progress_end_in_a_blocked_max_plan_attempts_eval(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    node_id = insert_node(pg)
    pg.execute(
        """UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}',
           attributes = '{"kernel.name": "linux"}' WHERE id = %s""",
        (node_id,),
    )
    eval_id = register(engine, "web")
    held = claim(engine, ("service",))
    assert held is not None and str(held.evaluation.id) == eval_id
    worker = Worker(Settings(database_url=database_url), database_url, ("service",))
    stop = threading.Event()
    thread = threading.Thread(target=worker.handle, args=(held, stop), daemon=True)
    lead = Leadership(engine, "applier")
    assert lead.try_acquire() and lead.term is not None
    rejected = 0
    try:
        thread.start()
        deadline = time.monotonic() + 60
        while thread.is_alive() and time.monotonic() < deadline:
            if pg.execute("SELECT 1 FROM plans WHERE status = 'pending'").fetchone() is None:
                time.sleep(0.02)
                continue
            # The node turns ineligible just for the applier's check and eligible again in the
            # commit that answers the worker: every plan is refused for it, while every new
            # snapshot still offers it, so no attempt makes progress.
            pg.execute("UPDATE nodes SET scheduling_eligibility = 'ineligible' WHERE id = %s", (node_id,))
            with Session(bind=lead.connection) as session, session.begin():
                assert apply_next(session, lead.term) is not None
                session.execute(
                    text("UPDATE nodes SET scheduling_eligibility = 'eligible' WHERE id = :id"), {"id": node_id}
                )
            rejected += 1
        thread.join(timeout=10)
    finally:
        stop.set()
        lead.close()
        worker.engine.dispose()
    assert not thread.is_alive()
    assert rejected == ATTEMPTS["service"]
    status = pg.execute("SELECT status, status_description, blocked_eval FROM evaluations WHERE id = %s", (eval_id,))
    row = status.fetchone()
    assert row is not None and row[0] == "failed" and "maximum attempts" in str(row[1])
    blocked = pg.execute("SELECT status, triggered_by, previous_eval FROM evaluations WHERE id = %s", (row[2],))
    assert blocked.fetchone() == ("blocked", "max-plan-attempts", held.evaluation.id)
