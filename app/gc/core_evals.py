"""Core evaluations: the leader queues one per collector on its interval (and `system gc`
forces one); a worker that claims it runs the collectors and logs the run in gc_runs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.engines import transaction
from app.db.state_index import next_index
from app.gc import client_gc
from app.gc.collector import Collector, Report
from app.gc.pacer import Pacer
from app.gc.thresholds import Thresholds
from app.models import Evaluation, GcRun
from app.store.sql import query
from app.values.constants import CORE_PRIORITY
from app.values.ids import new_id

log = structlog.get_logger(__name__)


def enqueue_core(session: Session, kind: str, thresholds: Thresholds) -> uuid.UUID | None:
    """Queue a core evaluation for one collector (or force-gc). Returns None when the same
    scheduled collector is already queued: ticks are idempotent, and such an idle tick writes
    nothing (it takes no index, so it wakes no blocking query)."""
    if session.execute(query("gc_core_queued"), {"kind": kind}).scalar_one():
        return None
    return _enqueue(session, kind, thresholds, next_index(session, ["evaluations"]))


def enqueue_forced(session: Session) -> uuid.UUID:
    """Queue a force-gc evaluation and, in the same transaction, ask every live node's client
    to destroy its terminal allocations at its next heartbeat (seed 000: a forced GC reaches
    the clients too)."""
    index = next_index(session, ["evaluations", "nodes"])
    eval_id = _enqueue(session, "force-gc", Thresholds.forced(), index)
    if eval_id is None:  # force-gc is never deduplicated; a None here is a schema bug
        raise RuntimeError("the force-gc evaluation was not created")
    client_gc.mark_client_gc(session, index)
    return eval_id


def _enqueue(session: Session, kind: str, thresholds: Thresholds, index: int) -> uuid.UUID | None:
    row = session.execute(
        query("gc_enqueue_core"),
        {
            "id": new_id(),
            "kind": kind,
            "priority": CORE_PRIORITY,
            "index": index,
            "params": json.dumps(thresholds.to_json()),
        },
    ).first()
    return None if row is None else uuid.UUID(str(row.id))


@dataclass(frozen=True)
class CoreEval:
    id: uuid.UUID
    kind: str
    thresholds: Thresholds


def load_core_eval(session: Session, eval_id: uuid.UUID, defaults: Thresholds) -> CoreEval:
    row = session.execute(select(Evaluation.job_id, Evaluation.core_params).where(Evaluation.id == eval_id)).one()
    return CoreEval(eval_id, str(row.job_id), Thresholds.from_params(row.core_params, defaults))


def run_core_eval(
    sessions: sessionmaker[Session],
    eval_id: uuid.UUID,
    worker: str,
    batch_size: int,
    defaults: Thresholds,
    still_ours: Callable[[], None] = lambda: None,
    pacer: Pacer | None = None,
) -> Report:
    """Run a claimed core evaluation and log it in gc_runs. The log row commits on its own, so
    a run that dies shows as `running` until the next run of that evaluation, or the next GC
    run once the evaluation is no longer pending, marks it `interrupted`. `defaults` are the
    configured thresholds, for an evaluation that carries none."""
    with transaction(sessions) as session:
        core = load_core_eval(session, eval_id, defaults)
        run_id = _start_run(session, core, worker)
    collector = Collector(sessions, core.thresholds, batch_size, still_ours, pacer)
    try:
        report = collector.run(core.kind)
    except BaseException as err:
        _finish_run(sessions, run_id, core.kind, collector.report, "failed", f"{type(err).__name__}: {err}")
        raise
    _finish_run(sessions, run_id, core.kind, report, "complete", None)
    if report.pauses:
        log.info("GC paced itself after slow batches", kind=core.kind, pauses=report.pauses, paused_s=report.paused_s)
    return report


def _start_run(session: Session, core: CoreEval, worker: str) -> int:
    # No index: a run's start wakes nobody (see _finish_run).
    session.execute(
        update(GcRun)
        .where(GcRun.eval_id == core.id, GcRun.status == "running")
        .values(status="interrupted", finished_at=datetime.now(UTC), error="the worker running it stopped")
    )
    run = GcRun(eval_id=core.id, kind=core.kind, status="running", thresholds=core.thresholds.to_json(), worker=worker)
    session.add(run)
    session.flush()
    return int(run.id)


def _finish_run(
    sessions: sessionmaker[Session], run_id: int, kind: str, report: Report, status: str, error: str | None
) -> None:
    """Record the outcome. A scheduled run that removed nothing (an idle tick) logs it without
    taking an index, so it wakes no blocking query; a forced run always does (its caller
    waits on it), and so does a failure."""
    with transaction(sessions) as session:
        if report.removed or status != "complete" or kind == "force-gc":
            next_index(session, ["gc_runs"])
        session.execute(
            update(GcRun)
            .where(GcRun.id == run_id)
            .values(
                status=status,
                error=error,
                removed=dict(report.removed),
                batches=report.batches,
                longest_batch_ms=report.longest_batch_ms,
                timeouts=report.timeouts,
                finished_at=datetime.now(UTC),
            )
        )


def recent_runs(session: Session, limit: int) -> Iterator[GcRun]:
    yield from session.scalars(select(GcRun).order_by(GcRun.id.desc()).limit(limit))


def run_for_eval(session: Session, eval_id: uuid.UUID) -> GcRun | None:
    return session.scalars(select(GcRun).where(GcRun.eval_id == eval_id).order_by(GcRun.id.desc()).limit(1)).first()
