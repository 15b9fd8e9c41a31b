"""A scheduling pass that keeps raising fails its evaluation with the error in StatusDescription."""

from __future__ import annotations

import threading

import psycopg
import pytest
from sqlalchemy import Engine
from structlog.testing import capture_logs

from app.db.engines import make_sessionmaker, transaction
from app.pipeline import broker
from app.pipeline.broker import DELIVERY_LIMIT
from app.settings.config import Settings
from tests.support.pipeline import claim, register
from workers.worker import Worker

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]


def test_last_delivery_error_is_kept_in_status_description(engine: Engine, pg: Conn) -> None:
    first = register(engine, "web")
    pg.execute("UPDATE evaluations SET delivery_count = %s", (DELIVERY_LIMIT - 2,))
    for expect_final in (False, True):
        pg.execute("UPDATE evaluations SET not_before = now() WHERE id = %s", (first,))
        held = claim(engine)
        assert held is not None
        with transaction(make_sessionmaker(engine)) as session:
            final = broker.nack(session, held, "ValueError: invalid literal for int() with base 10: '1h'")
        assert final is expect_final
    row = pg.execute("SELECT status, status_description FROM evaluations WHERE id = %s", (first,)).fetchone()
    assert row is not None and row[0] == "failed"
    assert "delivery limit (3)" in str(row[1]) and "ValueError: invalid literal" in str(row[1])


def test_a_raising_scheduler_fails_the_eval_once_and_the_worker_carries_on(
    engine: Engine, pg: Conn, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = Worker(Settings(database_url=database_url, poll_interval_s=0.1), database_url, ("service",))

    def explode(*args: object, **kwargs: object) -> None:
        raise ValueError("invalid literal for int() with base 10: '1h'")

    monkeypatch.setattr(worker, "schedule", explode)
    first = register(engine, "web")
    stop = threading.Event()
    try:
        with capture_logs() as logs:
            for _ in range(DELIVERY_LIMIT):
                pg.execute("UPDATE evaluations SET not_before = now() WHERE id = %s", (first,))
                held = claim(engine)
                assert held is not None
                worker.handle(held, stop)  # returns: a bad evaluation never takes the worker down
    finally:
        worker.engine.dispose()
        worker.wakeup.close()
    row = pg.execute("SELECT status, status_description FROM evaluations WHERE id = %s", (first,)).fetchone()
    assert row is not None and row[0] == "failed" and "ValueError: invalid literal" in str(row[1])
    with_traceback = [entry for entry in logs if entry.get("exc_info")]
    assert len(with_traceback) == 1 and "delivery limit" in with_traceback[0]["event"]
    assert sum(1 for entry in logs if entry["event"] == "scheduling failed; nacking") == DELIVERY_LIMIT - 1
