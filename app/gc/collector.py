"""The collectors: delete terminal rows in bounded batches (Nomad's core_sched.go rules, in
sql/queries/gc.sql and sql/functions/gc_v1.sql).

Every batch is its own short transaction, so a GC killed at any moment leaves a consistent
database and the next run carries on where it stopped."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import structlog
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engines import transaction
from app.db.state_index import next_index
from app.gc.pacer import Pacer
from app.gc.thresholds import FORCED_ORDER, Thresholds
from app.store.sql import query

log = structlog.get_logger(__name__)
T = TypeVar("T")

# Jobs judged per candidate window (and locked per job batch): batch size / 20.
JOB_BATCH_DIVISOR = 20
# Job GC deletes a job's children kind by kind, each statement bounded by the rows left in the
# batch's budget: (statement, the kind it deletes, rows per deleted row of that kind).
JOB_STAGES = (
    ("gc_job_allocations", "allocations", 1),
    ("gc_job_plans", "plans", 2),  # each with its plan result
    ("gc_job_evaluations", "evaluations", 1),
    ("gc_job_deployments", "deployments", 1),
    ("gc_job_versions", "job_versions", 1),
    ("gc_delete_jobs", "jobs", 3),  # with its current version and periodic launch record
)
JOB_TABLES = ["jobs", "evaluations", "allocations", "deployments", "plans"]
# A batch that loses a deadlock or times out on a row lock (its cascades touch rows other
# writers update) just runs again.
DEADLOCK_RETRIES = 5
RETRYABLE = ("40P01", "40001", "55P03")
# A batch cancelled by statement_timeout runs again with half the rows, down to one row; a
# one-row batch that still times out fails the run (logged in gc_runs, never silently).
STATEMENT_TIMEOUT = "57014"
# Batches commit without waiting for their WAL to reach disk (see Collector._transaction); the
# state index is stamped, synchronously, at most this often and when a run ends.
STAMP_INTERVAL_S = 1.0


@dataclass
class Report:
    """What one GC run removed, and the longest lock hold it caused."""

    removed: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    longest_batch_ms: int = 0
    largest_batch: int = 0  # most rows one transaction deleted
    timeouts: int = 0  # batches cancelled by statement_timeout and retried with half the rows
    pauses: int = 0  # pauses after a slow batch (see Pacer)
    paused_s: float = 0.0

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
        pacer: Pacer | None = None,
        stamp_interval_s: float = STAMP_INTERVAL_S,
    ) -> None:
        self.sessions = sessions
        self.stamp_interval_s = stamp_interval_s
        self.pacer = pacer or Pacer(0.0)
        self.thresholds = thresholds
        self.batch_size = batch_size
        self.limit = batch_size  # rows per batch; halved for the rest of the run on a statement timeout
        self.still_ours = still_ours
        self.report = Report()
        self.as_of: datetime | None = None
        self._parents: set[tuple[str, str]] = set()
        self._unstamped: set[str] = set()
        self._stamped_at = time.monotonic()

    def run(self, kind: str) -> Report:
        with self.sessions() as session:
            # Database time: thresholds are measured on the same clock that stamped the rows.
            self.as_of = session.execute(text("SELECT now()")).scalar_one()
        try:
            for collector in FORCED_ORDER if kind == "force-gc" else (kind,):
                getattr(self, "_" + collector.replace("-", "_"))()
            self._prune_runs()
        except BaseException:
            # Whatever was deleted before the failure still wakes the blocking queries.
            with suppress(Exception):
                self._stamp()
            raise
        self._stamp()
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
        """Walk the candidate jobs once, window by window in key order (the scan per run is
        bounded by the candidates, not by candidates times batches); collect each window's
        collectable jobs; then revisit parents whose last child went."""
        after = ("", "")
        while True:
            window = self._transaction(partial(self._job_window, after=after))
            if not window:
                break
            self._collect_jobs([(r.namespace, r.id) for r in window if r.collectable])
            after = (window[-1].namespace, window[-1].id)
        while self._parents:
            parents = sorted(self._parents)
            self._parents.clear()
            self._collect_jobs(parents)

    def _job_window(self, session: Session, limit: int, after: tuple[str, str]) -> Sequence[Any]:
        params = self._age(self.thresholds.job_s) | {
            "after_namespace": after[0],
            "after_id": after[1],
            "limit": _jobs_per_batch(limit),
        }
        return session.execute(query("gc_job_candidates"), params).all()

    def _collect_jobs(self, jobs: list[tuple[str, str]]) -> None:
        size = _jobs_per_batch(self.limit)
        for start in range(0, len(jobs), size):
            chunk = jobs[start : start + size]
            while self._batch(JOB_TABLES, partial(self._job_batch, jobs=chunk)):
                pass

    def _job_batch(self, session: Session, limit: int, jobs: list[tuple[str, str]]) -> dict[str, int]:
        """Lock the jobs, re-check them, then delete what the still collectable ones own, kind
        by kind, at most `limit` rows in all. Stops at the first kind that may have more left."""
        age = self._age(self.thresholds.job_s)
        keys = {"namespaces": [ns for ns, _ in jobs], "ids": [job_id for _, job_id in jobs]}
        locked = session.execute(query("gc_lock_jobs"), age | keys).all()
        if not locked:
            return {}
        keys = {"namespaces": [r.namespace for r in locked], "ids": [r.id for r in locked]}
        victims = session.execute(query("gc_recheck_jobs"), age | keys).all()
        if not victims:
            return {}
        params = age | {"namespaces": [r.namespace for r in victims], "ids": [r.id for r in victims]}
        removed: Counter[str] = Counter()
        budget = limit
        for name, kind, width in JOB_STAGES:
            # A plan with its result, or a job with its version and launch record, is the
            # smallest unit: a batch of fewer rows than that still takes one.
            cap = budget // width or int(budget == limit)
            if cap < 1:
                break
            row = dict(session.execute(query(name), params | {"limit": cap}).mappings().one())
            parents = zip(row.pop("parent_namespaces", []), row.pop("parent_ids", []), strict=True)
            self._parents.update((str(ns), str(job_id)) for ns, job_id in parents)
            counts = {str(k): int(v) for k, v in row.items()}
            removed.update(counts)
            budget -= sum(counts.values())
            if counts[kind] >= cap:
                break
        return dict(removed)

    def _node_gc(self) -> None:
        while self._batch(["nodes", "evaluations"], self._nodes):
            pass
        while self._batch(["class_unblocks"], self._class_unblocks):
            pass

    def _nodes(self, session: Session, limit: int) -> dict[str, int]:
        """Lock empty nodes down past the threshold, then re-check and delete them with a fresh
        snapshot, which sees every allocation committed before the lock (none can follow it)."""
        params = self._age(self.thresholds.node_s)
        locked = session.execute(query("gc_lock_nodes"), params | {"limit": limit}).all()
        if not locked:
            return {}
        return _counts(session, "gc_delete_nodes", params | {"ids": [r.id for r in locked]})

    def _class_unblocks(self, session: Session, limit: int) -> dict[str, int]:
        locked = session.execute(query("gc_lock_class_unblocks"), {"limit": limit}).scalars().all()
        if not locked:
            return {}
        return _counts(session, "gc_delete_class_unblocks", {"classes": list(locked)})

    def _prune_runs(self) -> None:
        marked = 0

        def step(session: Session, _limit: int) -> dict[str, int]:
            nonlocal marked
            counts = _counts(session, "gc_prune_runs", {})
            marked = counts.pop("interrupted")
            return counts

        if not self._batch(["gc_runs"], step) and marked:
            self._bump(["gc_runs"])

    def _age(self, seconds: float) -> dict[str, object]:
        return {"threshold_s": seconds, "as_of": self.as_of}

    def _until_done(self, tables: list[str], name: str, params: Mapping[str, object]) -> None:
        while self._batch(tables, lambda s, limit: _counts(s, name, {**params, "limit": limit})):
            pass

    def _batch(self, tables: list[str], step: Callable[[Session, int], dict[str, int]]) -> int:
        """One batch in its own transaction. It deliberately does not hold the state index
        (which would stall every other writer for the whole batch): row locks and re-checks
        keep it safe, and the index is stamped soon after (at most STAMP_INTERVAL_S later), so
        blocking queries still wake."""
        started = 0.0

        def timed(session: Session, limit: int) -> dict[str, int]:
            nonlocal started
            started = time.monotonic()
            return step(session, limit)

        counts = self._transaction(timed)
        elapsed = time.monotonic() - started
        rows = self.report.add(counts, elapsed)
        if rows:
            self._unstamped.update(tables)
            if time.monotonic() - self._stamped_at >= self.stamp_interval_s:
                self._stamp()
        pause = self.pacer.pause_after(tuple(tables), rows, elapsed)
        if pause > 0:
            self.report.pauses += 1
            self.report.paused_s += pause
            self.pacer.sleep(pause)
        return rows

    def _stamp(self) -> None:
        """Bump the state index of the tables batches changed since the last stamp. Its commit
        is synchronous, so it also makes every batch before it durable: a reader never sees an
        index that a server crash could take back."""
        if self._unstamped:
            self._bump(sorted(self._unstamped))
            self._unstamped.clear()
        self._stamped_at = time.monotonic()

    def _bump(self, tables: list[str]) -> None:
        with transaction(self.sessions) as session:
            next_index(session, tables)

    def _transaction(self, step: Callable[[Session, int], T]) -> T:
        """Run `step(session, limit)` in its own transaction. Deadlocks and lock timeouts run it
        again; a statement timeout runs it again with half the rows (for the rest of the run),
        and fails the run once even one row is too many."""
        attempt = 0
        while True:
            self.still_ours()
            try:
                with transaction(self.sessions) as session:
                    # A batch lost in a server crash is collected again by the next run, and
                    # the synchronous stamp that follows makes it durable. Not waiting for the
                    # flush of every batch's WAL took the claim p99 during a 1M-row GC from
                    # about 3.4x to 2.3-2.9x its usual value (bench/gc.py): other commits no
                    # longer queue behind GC's flushes.
                    session.execute(text("SET LOCAL synchronous_commit = off"))
                    return step(session, self.limit)
            except (OperationalError, DBAPIError) as err:
                code = getattr(err.orig, "sqlstate", None)
                if code == STATEMENT_TIMEOUT and self.limit > 1:
                    self.limit = max(1, self.limit // 2)
                    self.report.timeouts += 1
                    log.warning("GC batch hit the statement timeout; retrying with fewer rows", rows=self.limit)
                    continue
                attempt += 1
                if code not in RETRYABLE or attempt >= DEADLOCK_RETRIES:
                    raise


def _jobs_per_batch(limit: int) -> int:
    return max(1, limit // JOB_BATCH_DIVISOR)


def _counts(session: Session, name: str, params: Mapping[str, object]) -> dict[str, int]:
    row = session.execute(query(name), params).mappings().one()
    return {str(k): int(v) for k, v in row.items()}
