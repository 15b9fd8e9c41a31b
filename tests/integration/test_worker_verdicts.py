"""A worker takes its plan's verdict from the applier's notification (plan_record_status's
payload) and reads the database for it only when the notification did not tell it: a payload too
long, an applier of an earlier release, a notification missed."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.pipeline import plans
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from tests.support.pipeline import claim, handling, register_mock_job
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of a plan's verdict from the database, by plan ID."""
    reads: list[int] = []
    real = plans.result

    def result(engine: Engine, plan_id: int) -> plans.AppliedPlan | None:
        reads.append(plan_id)
        return real(engine, plan_id)

    monkeypatch.setattr(plans, "result", result)
    return reads


def schedule_one(engine: Engine, pg: Conn, database_url: str) -> str:
    """A real worker handles a count-3 service job's evaluation; its plans are applied here as
    they arrive. The worker polls only every minute: a verdict it waited for in vain would show
    as a worker that never finishes. Returns the evaluation's final status."""
    for i in range(3):
        insert_node(pg, name=f"n{i}", cpu=2000)
    pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")
    eval_id = register_mock_job(engine, "web", count=3, cpu=100)
    held = claim(engine)
    assert held is not None and str(held.evaluation.id) == eval_id
    settings = Settings(database_url=database_url, poll_interval_s=60)
    deadline = time.monotonic() + 30  # a hang, not a speed: the exchange takes well under a second
    with handling(engine, database_url, held, settings) as (thread, lead):
        assert lead.term is not None
        while thread.is_alive():
            assert time.monotonic() < deadline, "the worker is still waiting for a verdict"
            with Session(bind=lead.connection) as session, session.begin():
                if apply_next(session, lead.term) is None:
                    thread.join(0.02)
    row = pg.execute("SELECT status FROM evaluations WHERE id = %s", (eval_id,)).fetchone()
    assert row is not None
    placed = pg.execute("SELECT count(*) FROM allocations WHERE eval_id = %s", (eval_id,)).fetchone()
    assert placed == (3,)
    return str(row[0])


def test_the_worker_reads_no_verdict_the_notification_told(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = counting(monkeypatch)
    assert schedule_one(engine, pg, database_url) == "complete"
    assert reads == []


TOLD = plans.told_verdicts


@pytest.mark.parametrize(
    "tell",
    [
        pytest.param(lambda payloads: {}, id="nothing-told"),
        # An applier of an earlier release names the plans only.
        pytest.param(
            lambda payloads: TOLD(",".join(e.split(":")[0] for e in p.split(",")) for p in payloads), id="bare-ids"
        ),
    ],
)
def test_the_worker_reads_the_verdict_the_notification_did_not_tell(
    engine: Engine,
    pg: Conn,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tell: Callable[[list[str]], dict[int, plans.AppliedPlan]],
) -> None:
    reads = counting(monkeypatch)
    monkeypatch.setattr(plans, "told_verdicts", tell)
    assert schedule_one(engine, pg, database_url) == "complete"
    assert len(reads) == 1
