"""The server roles' loops survive what they do not expect (issue 23): an exception injected
into the worker's claim, the applier's apply step or the leader's term renewal is logged, backed
off from, and the role carries on instead of its thread (and so its process) dying silently."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from app.db.engines import libpq_url, make_engine
from app.settings.config import Settings
from tests.support.pipeline import register
from tests.support.processes import wait_for

pytestmark = pytest.mark.integration


def flaky(real: Callable[..., Any], failures: int, calls: list[int]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= failures:
            raise RuntimeError(f"injected failure {len(calls)}")
        return real(*args, **kwargs)

    return call


@contextmanager
def running(target: Callable[[threading.Event], None]) -> Iterator[threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(stop,), daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(timeout=30)


def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, poll_interval_s=0.1)


def test_the_worker_loop_survives_an_exception_in_its_claim(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.pipeline import broker  # the module the worker claims through
    from workers import worker as worker_module

    calls: list[int] = []
    monkeypatch.setattr(broker, "claim_batch", flaky(broker.claim_batch, 2, calls))
    engine = make_engine(database_url, "test")
    try:
        eval_id = register(engine, "web")
    finally:
        engine.dispose()
    worker = worker_module.Worker(settings(database_url), database_url, ("service",))
    with running(worker.run) as thread, psycopg.connect(libpq_url(database_url), autocommit=True) as pg:

        def claimed() -> bool:  # no applier here: the claim and its plan are the worker's part
            row = pg.execute("SELECT count(*) FROM plans WHERE eval_id = %s", (eval_id,)).fetchone()
            return row == (1,)

        assert wait_for(claimed, 60), "the worker died on the injected exception"
        assert thread.is_alive()
    assert len(calls) > 2


@pytest.mark.parametrize("pipelined", [True, False])
def test_the_applier_survives_an_exception_in_its_apply_step(
    database_url: str, monkeypatch: pytest.MonkeyPatch, pipelined: bool
) -> None:
    from app.pipeline.plan_apply.applier import prepare
    from workers import applier as applier_module

    calls: list[int] = []
    monkeypatch.setattr(applier_module, "prepare", flaky(prepare, 2, calls))

    def run(stop: threading.Event) -> None:
        configured = Settings(database_url=database_url, poll_interval_s=0.1, applier_pipeline=pipelined)
        applier_module.run_applier(configured, database_url, stop)

    with running(run) as thread:
        assert wait_for(lambda: len(calls) > 5, 60), "the applier stopped applying after the injected exception"
        assert thread.is_alive()


def test_the_leader_survives_an_exception_in_its_term_renewal(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.db.leadership import Leadership
    from workers import leader as leader_module

    calls: list[int] = []
    monkeypatch.setattr(Leadership, "renew", flaky(Leadership.renew, 1, calls))

    def run(stop: threading.Event) -> None:
        leader_module.run_leader(settings(database_url), database_url, stop)

    with running(run) as thread:
        # The renewal after the failure happens only if the leader stood for election again.
        assert wait_for(lambda: len(calls) > 2, 60), "the leader died on the injected exception"
        time.sleep(0.1)
        assert thread.is_alive()
