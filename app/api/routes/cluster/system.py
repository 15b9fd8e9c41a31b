"""/v1/system/gc (forced garbage collection) and the GC run log."""

from __future__ import annotations

import time
import uuid

from flask import Blueprint, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.http.context import read, respond, state, write
from app.api.http.params import integer_arg
from app.db.state_index import current_index
from app.gc.core_evals import enqueue_forced, recent_runs, run_for_eval
from app.models import Evaluation, GcRun
from app.values.errors import Failed, StillRunning
from app.wire.api.api_system import GcRunJson

bp = Blueprint("system", __name__)
TABLES = ["evaluations", "gc_runs"]


@bp.route("/system/gc", methods=["PUT", "POST"])
def force_gc() -> Response:
    """Queue a force-gc core evaluation and answer once a worker has run it: every collector,
    thresholds ignored, nodes last."""
    eval_id = write(enqueue_forced)
    run, index = _wait_for_run(eval_id, time.monotonic() + state().settings.force_gc_wait_s)
    if run.status != "complete":
        raise Failed.of("EvalID", f"garbage collection {eval_id} {run.status}: {run.error}")
    return respond(encode_run(run), index)


@bp.route("/system/gc/runs", methods=["GET"])
def gc_runs() -> Response:
    limit = integer_arg("limit", minimum=1, maximum=1000) or 20
    runs, index = read(TABLES, lambda s: [encode_run(r) for r in recent_runs(s, limit)])
    return respond(runs, index)


def _wait_for_run(eval_id: uuid.UUID, deadline: float) -> tuple[GcRun, int]:
    current = state()
    while True:
        with current.reads() as session, session.begin():
            index = current_index(session, TABLES)
            run = _finished_run(session, eval_id)
            if run is not None:
                return run, index
        if time.monotonic() >= deadline:
            raise StillRunning.of(
                "EvalID",
                f"garbage collection is still running as evaluation {eval_id}; it carries on: "
                f"follow it with `corral system gc-runs` (GET /v1/system/gc/runs) or GET /v1/evaluation/{eval_id}",
            )
        current.watcher.wait_beyond(TABLES, index, deadline)


def _finished_run(session: Session, eval_id: uuid.UUID) -> GcRun | None:
    """The run's final record once the evaluation is no longer pending, else None. Found by
    evaluation id, which gc_runs keeps even after a concurrent GC collected the evaluation
    itself (then it was terminal, so its latest run is final)."""
    status = session.scalar(select(Evaluation.status).where(Evaluation.id == eval_id))
    if status == "pending":  # queued, running, or nacked and waiting to be retried
        return None
    run = run_for_eval(session, eval_id)
    if run is None:
        why = "its record is gone" if status is None else f"its evaluation is {status} and never ran"
        raise Failed.of("EvalID", f"garbage collection {eval_id}: {why}")
    session.expunge(run)
    if run.status == "running":
        # The evaluation ended (the lease reaper failed it) while its worker was gone; the next
        # GC run records that too.
        run.status, run.error = "interrupted", f"its evaluation is {status or 'gone'}; the worker running it stopped"
    return run


def encode_run(run: GcRun) -> GcRunJson:
    finished = run.finished_at
    return {
        "ID": run.id,
        "Kind": run.kind,
        "Status": run.status,
        "EvalID": str(run.eval_id) if run.eval_id else None,
        "Removed": run.removed,
        "RowsRemoved": sum(int(v) for v in run.removed.values()),
        "Batches": run.batches,
        "LongestBatchMs": run.longest_batch_ms,
        "Timeouts": run.timeouts,
        "Thresholds": run.thresholds,
        "Worker": run.worker,
        "Error": run.error,
        "StartedAt": run.started_at.isoformat(),
        "FinishedAt": finished.isoformat() if finished else None,
        "DurationMs": round((finished - run.started_at).total_seconds() * 1000) if finished else None,
    }
