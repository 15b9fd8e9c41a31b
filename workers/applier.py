"""`corral applier`: the single writer of placements. One process holds the role; others stand by."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import psycopg
import structlog
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import autocommitted, make_engine
from app.db.leadership import Leadership
from app.metrics.timings import PLAN_APPLY
from app.pipeline.plan_apply.applier import Deposed, InFlight, Prepared, commit_batch, prepare
from app.pipeline.plan_apply.plan_writes import raw
from app.pipeline.snapshot import BEGIN_SNAPSHOT
from app.settings.config import Settings
from workers.election import stand_for_election
from workers.runtime import PLANS_CHANNEL, Wakeup

log = structlog.get_logger(__name__)
RENEW_EVERY_S = 1.0


# The pipeline's two threads share the GIL. Python hands it over every 5 ms by default, so the
# writer, back from each of its round trips while the reader checks the next batch, waited up to
# that long every time (measured: 11.7 ms of a batch's 54 in its first round trip at 5 ms,
# 2.8-5.6 ms at 0.2-0.5 ms).
PIPELINE_SWITCH_INTERVAL_S = 0.0005


def run_applier(settings: Settings, database_url: str, stop: threading.Event) -> None:
    if settings.applier_pipeline:
        sys.setswitchinterval(min(sys.getswitchinterval(), PIPELINE_SWITCH_INTERVAL_S))
    engine = make_engine(database_url, "applier", pool_size=3)  # the role, the renewer, the reader
    # Woken by plan submissions only, at once: no debounce, since a batch gathers whatever
    # arrives while the previous one commits (group commit) and one worker's plan should not
    # wait for company that may never come.
    wakeup = Wakeup(database_url, "applier", settings.poll_interval_s, channels=(PLANS_CHANNEL,), debounce_s=0)
    try:
        stand_for_election(
            engine, "applier", stop, lambda lead: _serve(engine, lead, wakeup, stop, settings), lost=(Deposed,)
        )
    finally:
        wakeup.close()
        engine.dispose()


def _serve(engine: Engine, lead: Leadership, wakeup: Wakeup, stop: threading.Event, settings: Settings) -> None:
    """Apply batches of up to `applier_batch` plans, one transaction (one commit, one WAL flush)
    each, until stopped or deposed: pipelined (the next batch checked while this one commits)
    unless `applier_pipeline` is off."""
    deposed = threading.Event()
    renewer = threading.Thread(target=_renew, args=(engine, lead, stop, deposed), daemon=True)
    renewer.start()
    assert lead.term is not None
    if settings.applier_pipeline:
        _serve_pipelined(engine, lead, wakeup, (stop, deposed), settings.applier_batch)
    else:
        _serve_serially(lead, wakeup, (stop, deposed), settings.applier_batch)
    if deposed.is_set():
        raise Deposed("term renewal failed")


def _serve_serially(lead: Leadership, wakeup: Wakeup, until: tuple[threading.Event, ...], batch: int) -> None:
    """Each batch read, checked and written in one transaction, one after the other."""
    while not any(event.is_set() for event in until):
        if _drained(_apply_serially(lead, batch), batch, wakeup):
            wakeup.wait()


def _serve_pipelined(
    engine: Engine, lead: Leadership, wakeup: Wakeup, until: tuple[threading.Event, ...], batch: int
) -> None:
    """Nomad's plan pipelining, while the queue is deep. This thread reads and checks batch N+1
    (on a connection of its own, in one snapshot) while a writer thread writes and commits batch
    N on the term holder's connection; N's placements are laid over N+1's read until the read
    sees N committed. The applier's Python and Postgres then work at the same time instead of
    taking turns. One batch at most is in flight: N+1 is handed over only once N has committed.
    Any failure of N ends the term's loop with N+1 never written (its read wrote nothing).

    A batch smaller than DEEP_BATCH (a few plans, as many small jobs give) is applied the serial
    way, in one transaction: the pipeline's own round trips (a second transaction, the unlocked
    lease read) cost more than the little work they would overlap (measured: 2.5 against 1.6 ms
    of applier CPU per evaluation in bench.small_jobs)."""
    with autocommitted(engine) as reader, ThreadPoolExecutor(1, thread_name_prefix="applier-writer") as writer:
        committing: tuple[InFlight, Future[list[int]]] | None = None
        deep = False
        try:
            while not any(event.is_set() for event in until):
                if not deep:
                    if committing is not None:
                        writing, committing = committing[1], None
                        writing.result()
                    applied = _apply_serially(lead, batch)
                    deep = applied is not None and _deep(applied)
                    if not deep and _drained(applied, batch, wakeup):
                        wakeup.wait()
                    continue
                prepared = _prepare(reader, batch, [committing[0]] if committing else [])
                if committing is not None:
                    writing, committing = committing[1], None
                    writing.result()  # N committed (or its failure raises here)
                if prepared is None:
                    deep = False
                    continue
                committing = (InFlight(prepared.plan_ids, prepared.effects), writer.submit(_commit, lead, prepared))
                deep = _deep(prepared)
        finally:
            if committing is not None:  # let the batch being written finish before the role drops
                _settle(committing[1])


def _drained(applied: Prepared | None, batch: int, wakeup: Wakeup) -> bool:
    """Whether the queue was empty as of the last batch's read, so the next plan's notification
    is worth waiting for: nothing was pending, or fewer plans than a full batch while the
    listener is up (a plan committed after that read notifies it; one committed before was in
    the batch). Reading again at once found nothing about as often as not: an empty
    transaction per batch. Without the listener, a partial batch is followed by another read."""
    return applied is None or (len(applied.pending) < batch and wakeup.listening)


# A batch this big (in plans, or in placements for one big plan's chunk) is worth pipelining.
DEEP_BATCH_PLANS = 16
DEEP_BATCH_PLACEMENTS = 500


def _deep(prepared: Prepared) -> bool:
    return len(prepared.pending) >= DEEP_BATCH_PLANS or prepared.placements >= DEEP_BATCH_PLACEMENTS


def _apply_serially(lead: Leadership, batch: int) -> Prepared | None:
    """One batch read, checked and written in one transaction on the term holder's connection."""
    assert lead.term is not None
    began = time.perf_counter()
    with Session(bind=lead.connection) as session, session.begin():
        prepared = prepare(raw(session), batch)
        if prepared is None:
            return None
        plan_ids = commit_batch(session, lead.term, prepared)
    _observe(began, plan_ids)
    return prepared


def _settle(writing: Future[list[int]]) -> None:
    """Wait for the batch being written when the loop ends. Its failure is logged, not raised:
    the loop is already ending on its own error, or on stop; the plans stay pending either way."""
    try:
        writing.result()
    except Exception as err:
        log.warning("the batch being written when the applier stopped failed", error=repr(err))


def _prepare(reader: psycopg.Connection[Any], batch: int, in_flight: list[InFlight]) -> Prepared | None:
    reader.execute(BEGIN_SNAPSHOT)
    try:
        return prepare(reader, batch, in_flight)
    finally:
        reader.execute("COMMIT")


def _commit(lead: Leadership, prepared: Prepared) -> list[int]:
    assert lead.term is not None
    began = time.perf_counter()
    with Session(bind=lead.connection) as session, session.begin():
        plan_ids = commit_batch(session, lead.term, prepared)
    _observe(began, plan_ids)
    return plan_ids


def _observe(began: float, plan_ids: list[int]) -> None:
    # Per plan, amortized over its batch: the count stays the number of plans applied and
    # the sum the time spent applying them.
    share = (time.perf_counter() - began) * 1000 / len(plan_ids)
    for _ in plan_ids:
        PLAN_APPLY.observe(share)
    log.debug("applied plans", plan_ids=plan_ids)


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
