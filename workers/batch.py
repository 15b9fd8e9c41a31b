"""A batch of evaluations a worker loop claimed together (`eval_batch`), taken through their
first try with one read and one write for all: one snapshot transaction (the cluster read
once, each job's part beside it), the passes one after the other on it, each seeing the room
the earlier plans take (batch_overlay.py), one transaction that submits every plan, and one
wait for all their verdicts. What follows a first try (a retry after a partial commit, the
worker's own completion) is each evaluation's own, as for one claimed alone.

An evaluation the batch cannot carry goes the one-at-a-time way (Worker.schedule from the
start): its pass streams a big plan in chunks; its pass failed (the one-at-a-time pass fails
the same way, and nacks it); its plan came back unwritten. A failure of the shared read or
write sends every one of them that way: nothing was submitted, or a submit of the same
attempt finds what was (plans.submit is idempotent per attempt)."""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import structlog
from sqlalchemy import Engine

from app.metrics.timings import INVOKE_SCHEDULER, SUBMIT_PLAN, timed
from app.pipeline import plans
from app.pipeline.batch_overlay import combine, taken_by, with_taken
from app.pipeline.broker import Claim, LeaseLost
from app.pipeline.snapshot import SnapshotLoader
from app.scheduler import stream
from app.scheduler.metrics import MetricsOptions
from app.settings.config import Settings
from app.structs import NodeUsage, Plan, SchedulerResult, Snapshot
from workers.leases import Lease
from workers.runtime import VERDICTS_CHANNEL
from workers.tries import ShuttingDown, Try, completion_of, outcome_of


class VerdictWait(Protocol):
    def wait(
        self, timeout: float | None = None, *, channel: str | None = None, wanted: Callable[[str], bool] | None = None
    ) -> list[str]: ...


class Worker(Protocol):
    """What a batch needs of the worker that claimed it (workers/worker.py's Worker), named here
    so that this module does not import the worker that imports it."""

    engine: Engine
    settings: Settings
    loader: SnapshotLoader
    placement_metrics: MetricsOptions

    @property
    def wakeup(self) -> VerdictWait: ...


log = structlog.get_logger(__name__)
Firsts = dict[uuid.UUID, Try | Exception]


@dataclass(frozen=True)
class _Passed:
    held: Claim
    snapshot: Snapshot
    result: SchedulerResult
    scheduled_at: datetime


def first_tries(worker: Worker, claims: list[Claim], keepers: dict[uuid.UUID, Lease], stop: threading.Event) -> Firsts:
    """Each evaluation's first try, by evaluation ID, or the exception that ended it (a lapsed
    lease, a shutdown); one missing goes the one-at-a-time way."""
    scheduled_at = datetime.now(UTC)
    try:
        snapshots = worker.loader.load_batch([held.evaluation for held in claims])
    except Exception as err:  # the one-at-a-time way reads again, and reports what fails there
        log.warning("batch snapshot failed; scheduling one at a time", error=f"{type(err).__name__}: {err}"[:300])
        return {}
    passed = _passes(worker, claims, snapshots, scheduled_at)
    firsts: Firsts = {}
    submitting: list[_Passed] = []
    for p in passed:
        if p.result.plan.is_noop:
            firsts[p.held.evaluation.id] = Try(outcome_of(p.result, p.snapshot.index, scheduled_at), None, 0)
        else:
            submitting.append(p)
    if submitting:
        firsts |= _submit_and_wait(worker, submitting, keepers, stop)
    return firsts


def _passes(worker: Worker, claims: list[Claim], snapshots: list[Snapshot], scheduled_at: datetime) -> list[_Passed]:
    """The passes, in claim order (best first), each on the snapshot with the room the plans
    before it take. A pass that would stream its plan in chunks, or fails, is left out."""
    passed: list[_Passed] = []
    taken: dict[uuid.UUID, NodeUsage] = {}
    chunk = worker.settings.plan_chunk_placements
    for held, read in zip(claims, snapshots, strict=True):
        ev = held.evaluation
        snapshot = with_taken(read, taken)
        try:
            with timed(INVOKE_SCHEDULER, type=ev.type):
                parts = stream(
                    ev, snapshot, now_ns=time.time_ns(), chunk_placements=chunk, metrics=worker.placement_metrics
                )
                result = _whole_pass(parts)
        except Exception as err:
            log.info("batched pass failed; retrying it alone", eval_id=str(ev.id), error=f"{type(err).__name__}")
            continue
        if result is None:
            continue
        passed.append(_Passed(held, snapshot, result, scheduled_at))
        taken = combine(taken, taken_by(result.plan, snapshot))
    return passed


def _whole_pass(parts: Generator[Plan, None, SchedulerResult]) -> SchedulerResult | None:
    """The pass's result, or None when it yields a chunk: a big plan is streamed alone."""
    try:
        next(parts)
    except StopIteration as done:
        result: SchedulerResult = done.value
        return result
    parts.close()
    return None


def _submit_and_wait(
    worker: Worker, passed: list[_Passed], keepers: dict[uuid.UUID, Lease], stop: threading.Event
) -> Firsts:
    outcomes = {p.held.evaluation.id: outcome_of(p.result, p.snapshot.index, p.scheduled_at) for p in passed}
    submissions = [
        plans.Submission(p.held, p.result.plan, completion_of(outcomes[p.held.evaluation.id])) for p in passed
    ]
    with timed(SUBMIT_PLAN):
        try:
            plan_ids = plans.submit_batch(worker.engine, submissions)
        except Exception as err:
            log.warning("batch submit failed; scheduling one at a time", error=f"{type(err).__name__}: {err}"[:300])
            return {}
        waiting = {pid: p.held.evaluation.id for p, pid in zip(passed, plan_ids, strict=True) if pid is not None}
        try:
            verdicts = await_verdicts(worker, waiting, keepers, stop)
        except Exception as err:  # each waits on its own: a submit of the same attempt finds its plan
            log.warning("batch wait failed; scheduling one at a time", error=f"{type(err).__name__}: {err}"[:300])
            return {}
    return {
        eval_id: verdict if isinstance(verdict, Exception) else Try(outcomes[eval_id], verdict, 1)
        for eval_id, verdict in verdicts.items()
    }


def await_verdicts(
    worker: Worker, waiting: dict[int, uuid.UUID], keepers: dict[uuid.UUID, Lease], stop: threading.Event
) -> dict[uuid.UUID, plans.AppliedPlan | Exception]:
    """The verdicts on the batch's plans (plan ID → evaluation ID), by evaluation: from the
    applier's notifications, read from the database only for those a notification could not
    tell (it came empty, the wait ended on the poll interval or a reconnect). A fenced plan or
    a lapsed lease is LeaseLost; a shutdown ends the wait for the rest with ShuttingDown."""
    waiting = dict(waiting)
    verdicts: dict[uuid.UUID, plans.AppliedPlan | Exception] = {}
    while waiting:
        wanted = {str(pid) for pid in waiting}
        payloads = worker.wakeup.wait(channel=VERDICTS_CHANNEL, wanted=functools.partial(concerns, plan_ids=wanted))
        told = plans.told_verdicts(payloads)
        if not payloads or not all(payloads):  # some verdicts may have gone untold: one read for them
            told |= plans.results(worker.engine, [pid for pid in waiting if pid not in told])
        for plan_id in list(waiting):
            applied = told.get(plan_id)
            if applied is not None:
                eval_id = waiting.pop(plan_id)
                fenced = LeaseLost(f"plan {plan_id} refused: evaluation {eval_id} is no longer ours")
                verdicts[eval_id] = fenced if applied.fenced else applied
        for plan_id, eval_id in list(waiting.items()):
            if keepers[eval_id].lost.is_set():
                del waiting[plan_id]
                verdicts[eval_id] = LeaseLost(f"evaluation {eval_id}: lease lapsed while waiting for plan {plan_id}")
            elif stop.is_set():
                del waiting[plan_id]
                verdicts[eval_id] = ShuttingDown(f"stopping while plan {plan_id} waits for the applier")
    return verdicts


def concerns(payload: str, plan_ids: set[str]) -> bool:
    """Whether a verdicts notification may concern one of the plans: an entry starts with its
    plan's ID, or it is empty (its verdicts did not fit: it may concern any plan)."""
    return not payload or any(entry.split(":", 1)[0] in plan_ids for entry in payload.split(","))
