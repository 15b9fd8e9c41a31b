"""Server-side garbage collection: core evaluations, and collectors that delete terminal rows
in bounded batches (Nomad's core_sched.go rules, in sql/queries/gc.sql and sql/functions/gc_v1.sql).

Every batch is its own short transaction, so a GC killed at any moment leaves a consistent
database and the next run carries on where it stopped."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.constants import CORE_PRIORITY
from app.db import transaction
from app.ids import new_id
from app.models import Evaluation, GcRun
from app.store import client_gc
from app.store.index import next_index
from app.store.sql import query

SCHEDULED = ("eval-gc", "job-gc", "node-gc", "deployment-gc")
# Forced GC runs every collector; evaluations go before jobs so a big stopped job is trimmed
# in bounded batches before its row goes, and nodes go last, once their allocations are gone.
FORCED_ORDER = ("eval-gc", "job-gc", "deployment-gc", "node-gc")
JOB_BATCH_DIVISOR = 20
# A batch that loses a deadlock or times out on a row lock (its cascades touch rows other
# writers update) just runs again.
DEADLOCK_RETRIES = 5
RETRYABLE = ("40P01", "40001", "55P03")  # a job owns a handful of rows (versions, evals, plans, allocations)


@dataclass(frozen=True)
class Thresholds:
    """Age (seconds) a terminal object must reach before its collector may take it."""

    eval_s: float
    batch_eval_s: float
    job_s: float
    node_s: float
    deployment_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> Thresholds:
        return cls(
            eval_s=settings.eval_gc_threshold_s,
            batch_eval_s=settings.batch_eval_gc_threshold_s,
            job_s=settings.job_gc_threshold_s,
            node_s=settings.node_gc_threshold_s,
            deployment_s=settings.deployment_gc_threshold_s,
        )

    @classmethod
    def forced(cls) -> Thresholds:
        return cls(0, 0, 0, 0, 0)

    def to_json(self) -> dict[str, float]:
        return {
            "eval": self.eval_s,
            "batch_eval": self.batch_eval_s,
            "job": self.job_s,
            "node": self.node_s,
            "deployment": self.deployment_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Thresholds:
        return cls(
            eval_s=float(data["eval"]),
            batch_eval_s=float(data["batch_eval"]),
            job_s=float(data["job"]),
            node_s=float(data["node"]),
            deployment_s=float(data["deployment"]),
        )


def enqueue_core(session: Session, kind: str, thresholds: Thresholds) -> uuid.UUID | None:
    """Queue a core evaluation for one collector (or force-gc). Returns None when the same
    scheduled collector is already queued: ticks are idempotent."""
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


@dataclass
class Report:
    """What one GC run removed, and the longest lock hold it caused."""

    removed: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    longest_batch_ms: int = 0
    largest_batch: int = 0  # most rows one transaction deleted

    def add(self, counts: dict[str, int], elapsed_s: float) -> int:
        self.removed.update({k: v for k, v in counts.items() if v})
        rows = sum(counts.values())
        self.batches += 1
        self.longest_batch_ms = max(self.longest_batch_ms, round(elapsed_s * 1000))
        self.largest_batch = max(self.largest_batch, rows)
        return rows


class Collector:
    """Runs the collectors of one core evaluation in bounded batches. `still_ours` is called
    between batches and raises if the evaluation's lease was lost, so a GC that another
    worker took over stops at a batch boundary."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        thresholds: Thresholds,
        batch_size: int,
        still_ours: Callable[[], None] = lambda: None,
    ) -> None:
        self.sessions = sessions
        self.thresholds = thresholds
        self.batch_size = batch_size
        self.still_ours = still_ours
        self.report = Report()
        self.as_of: datetime | None = None

    def run(self, kind: str) -> Report:
        with self.sessions() as session:
            # Database time: thresholds are measured on the same clock that stamped the rows.
            self.as_of = session.execute(text("SELECT now()")).scalar_one()
        for collector in FORCED_ORDER if kind == "force-gc" else (kind,):
            getattr(self, "_" + collector.replace("-", "_"))()
        self._batch(["gc_runs"], lambda s: _counts(s, "gc_prune_runs", {}))
        return self.report

    def _eval_gc(self) -> None:
        params = {
            "threshold_s": self.thresholds.eval_s,
            "batch_threshold_s": self.thresholds.batch_eval_s,
            "as_of": self.as_of,
        }
        self._until_done(["allocations"], "gc_allocations", params)
        self._until_done(["evaluations"], "gc_evaluations", params)

    def _deployment_gc(self) -> None:
        self._until_done(
            ["deployments", "allocations", "evaluations"], "gc_deployments", self._age(self.thresholds.deployment_s)
        )

    def _job_gc(self) -> None:
        limit = max(1, self.batch_size // JOB_BATCH_DIVISOR)
        tables = ["jobs", "evaluations", "allocations", "deployments"]
        while self._batch(tables, lambda s: self._locked_then_deleted(s, "jobs", limit)):
            pass

    def _node_gc(self) -> None:
        while self._batch(["nodes", "evaluations"], lambda s: self._locked_then_deleted(s, "nodes", self.batch_size)):
            pass

    def _age(self, seconds: float) -> dict[str, Any]:
        return {"threshold_s": seconds, "as_of": self.as_of}

    def _locked_then_deleted(self, session: Session, kind: str, limit: int) -> dict[str, int]:
        """Two statements: lock candidates, then re-check and delete them with a fresh snapshot,
        which sees every child committed before the lock and no child can follow it."""
        threshold = self.thresholds.job_s if kind == "jobs" else self.thresholds.node_s
        params: dict[str, Any] = self._age(threshold)
        locked = session.execute(query(f"gc_lock_{kind}"), {**params, "limit": limit}).all()
        if not locked:
            return {}
        if kind == "jobs":
            params |= {"namespaces": [r.namespace for r in locked], "ids": [r.id for r in locked]}
        else:
            params |= {"ids": [r.id for r in locked]}
        counts = _counts(session, f"gc_delete_{kind}", params)
        # Locked candidates that failed the re-check are not progress; stop if none went.
        return counts if counts.get(kind) else {}

    def _until_done(self, tables: list[str], name: str, params: dict[str, Any]) -> None:
        params = {**params, "limit": self.batch_size}
        while self._batch(tables, lambda s: _counts(s, name, params)):
            pass

    def _batch(self, tables: list[str], step: Callable[[Session], dict[str, int]]) -> int:
        """One batch in its own transaction. It deliberately does not hold the state index
        (which would stall every other writer for the whole batch): row locks and re-checks
        keep it safe, and the index is bumped right after, so blocking queries still wake."""
        for attempt in range(1, DEADLOCK_RETRIES + 1):
            self.still_ours()
            started = time.monotonic()
            try:
                with transaction(self.sessions) as session:
                    # A GC commit lost in a crash is redone by the next run: no need to make
                    # other writers' commits queue behind this batch's WAL flush.
                    session.execute(text("SET LOCAL synchronous_commit = off"))
                    counts = step(session)
                break
            except (OperationalError, DBAPIError) as err:
                if getattr(err.orig, "sqlstate", None) not in RETRYABLE or attempt == DEADLOCK_RETRIES:
                    raise
        rows = self.report.add(counts, time.monotonic() - started)
        if rows:
            with transaction(self.sessions) as session:
                next_index(session, tables)
        return rows


def _counts(session: Session, name: str, params: dict[str, Any]) -> dict[str, int]:
    row = session.execute(query(name), params).mappings().one()
    return {str(k): int(v) for k, v in row.items()}


@dataclass(frozen=True)
class CoreEval:
    id: uuid.UUID
    kind: str
    thresholds: Thresholds


def load_core_eval(session: Session, eval_id: uuid.UUID) -> CoreEval:
    row = session.execute(select(Evaluation.job_id, Evaluation.core_params).where(Evaluation.id == eval_id)).one()
    params = row.core_params or Thresholds.forced().to_json()
    return CoreEval(eval_id, str(row.job_id), Thresholds.from_json(params))


def run_core_eval(
    sessions: sessionmaker[Session],
    eval_id: uuid.UUID,
    worker: str,
    batch_size: int,
    still_ours: Callable[[], None] = lambda: None,
) -> Report:
    """Run a claimed core evaluation and log it in gc_runs (the log row commits on its own, so
    a run that dies shows as `running` until the next run of that evaluation marks it
    `interrupted`)."""
    with transaction(sessions) as session:
        core = load_core_eval(session, eval_id)
        run_id = _start_run(session, core, worker)
    collector = Collector(sessions, core.thresholds, batch_size, still_ours)
    try:
        report = collector.run(core.kind)
    except BaseException as err:
        _finish_run(sessions, run_id, collector.report, "failed", f"{type(err).__name__}: {err}")
        raise
    _finish_run(sessions, run_id, report, "complete", None)
    return report


def _start_run(session: Session, core: CoreEval, worker: str) -> int:
    next_index(session, ["gc_runs"])
    session.execute(
        update(GcRun)
        .where(GcRun.eval_id == core.id, GcRun.status == "running")
        .values(status="interrupted", finished_at=datetime.now(UTC), error="the worker running it stopped")
    )
    run = GcRun(eval_id=core.id, kind=core.kind, status="running", thresholds=core.thresholds.to_json(), worker=worker)
    session.add(run)
    session.flush()
    return int(run.id)


def _finish_run(sessions: sessionmaker[Session], run_id: int, report: Report, status: str, error: str | None) -> None:
    with transaction(sessions) as session:
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
                finished_at=datetime.now(UTC),
            )
        )


def recent_runs(session: Session, limit: int) -> Iterator[GcRun]:
    yield from session.scalars(select(GcRun).order_by(GcRun.id.desc()).limit(limit))


def run_for_eval(session: Session, eval_id: uuid.UUID) -> GcRun | None:
    return session.scalars(select(GcRun).where(GcRun.eval_id == eval_id).order_by(GcRun.id.desc()).limit(1)).first()
