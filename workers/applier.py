"""`corral applier`: the single writer of placements. One process holds the role; others stand by."""

from __future__ import annotations

import contextlib
import threading
import time

import psycopg
import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.engines import make_engine
from app.db.leadership import Leadership
from app.metrics.timings import PLAN_APPLY
from app.pipeline.applier import Deposed, apply_batch
from workers.loops import Backoff, Streak
from workers.runtime import PLANS_CHANNEL, Wakeup

log = structlog.get_logger(__name__)
RENEW_EVERY_S = 1.0


def run_applier(settings: Settings, database_url: str, stop: threading.Event) -> None:
    engine = make_engine(database_url, "applier", pool_size=2)
    # Woken by plan submissions only, at once: no debounce, since a batch gathers whatever
    # arrives while the previous one commits (group commit) and one worker's plan should not
    # wait for company that may never come.
    wakeup = Wakeup(database_url, "applier", settings.poll_interval_s, channels=(PLANS_CHANNEL,), debounce_s=0)
    backoff = Backoff(cap=5.0)
    streak = Streak("the applier role")
    try:
        while not stop.is_set():
            lead: Leadership | None = None
            try:
                lead = Leadership(engine, "applier")
                if lead.try_acquire():
                    backoff.reset()
                    streak.succeeded()
                    _serve(engine, lead, wakeup, stop, settings.applier_batch)
                else:
                    streak.succeeded()
                    stop.wait(1.0)
            except (Deposed, DBAPIError, psycopg.Error) as err:
                # Lost the term or the database: drop the role, then stand for election again.
                streak.failed(err)
                stop.wait(backoff.next())
            except Exception as err:  # a bug: log it once, back off, stand again (never die silently)
                streak.failed(err, traceback=True)
                stop.wait(backoff.next())
            finally:
                if lead is not None:
                    with contextlib.suppress(Exception):
                        lead.close()
    finally:
        wakeup.close()
        engine.dispose()


def _serve(engine: Engine, lead: Leadership, wakeup: Wakeup, stop: threading.Event, batch: int) -> None:
    """Apply batches of up to `batch` plans, one transaction (one commit, one WAL flush) each,
    until stopped or deposed."""
    deposed = threading.Event()
    renewer = threading.Thread(target=_renew, args=(engine, lead, stop, deposed), daemon=True)
    renewer.start()
    assert lead.term is not None
    while not stop.is_set() and not deposed.is_set():
        began = time.perf_counter()
        with Session(bind=lead.connection) as session, session.begin():
            plan_ids = apply_batch(session, lead.term, batch)
        if not plan_ids:  # an empty queue is no apply
            wakeup.wait()
            continue
        # Per plan, amortized over its batch: the count stays the number of plans applied and
        # the sum the time spent applying them.
        share = (time.perf_counter() - began) * 1000 / len(plan_ids)
        for _ in plan_ids:
            PLAN_APPLY.observe(share)
        log.debug("applied plans", plan_ids=plan_ids)
    if deposed.is_set():
        raise Deposed("term renewal failed")


def _renew(engine: Engine, lead: Leadership, stop: threading.Event, deposed: threading.Event) -> None:
    with engine.connect() as conn:
        while not stop.wait(RENEW_EVERY_S):
            try:
                if not lead.renew(conn):
                    deposed.set()
                    return
            except Exception as err:  # the database or anything else: the serving loop must step down
                log.warning("applier term renewal failed; stepping down", error=repr(err))
                deposed.set()
                return
