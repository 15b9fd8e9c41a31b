"""`corral worker`: claim an evaluation, snapshot, schedule, submit the plan, wait for the
verdict, retry on a partial commit, and complete — every write fenced by the lease token."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg
import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.db.engines import make_engine, make_sessionmaker, transaction
from app.db.leadership import holder_name
from app.gc.core_evals import run_core_eval
from app.gc.pacer import Pacer
from app.gc.thresholds import Thresholds
from app.metrics.timings import DEQUEUE_EVAL, INVOKE_SCHEDULER, SUBMIT_PLAN, observe, timed
from app.pipeline import broker, plans
from app.pipeline.broker import Claim, LeaseLost, Outcome
from app.pipeline.codecs.metrics_codec import placed_metrics_text
from app.pipeline.snapshot import SnapshotLoader
from app.scheduler import stream
from app.scheduler.metrics import MetricsOptions
from app.settings.config import Settings
from app.store import scheduler_workers
from app.structs import SchedulerResult, Snapshot
from app.values.constants import CORE_EVAL_TYPE
from workers.batch import concerns, first_tries
from workers.leases import Lease, Leases
from workers.listener import ListenerView, SharedListener
from workers.loops import Backoff, Streak, guarded
from workers.runtime import DEBOUNCE_S, INDEX_CHANNEL, VERDICTS_CHANNEL, Wakeup
from workers.timings_publisher import PUBLISH_EVERY_S, process_key
from workers.tries import ShuttingDown, Try, completion_of, outcome_of

log = structlog.get_logger(__name__)
ALL_SCHEDULERS = ("service", "batch", "system", "sysbatch", CORE_EVAL_TYPE)
RESCUE_EVERY_S = 1.0
ATTEMPTS = {"service": 5, "system": 5, "sysbatch": 5, "batch": 2}  # Nomad's plan retry limits


# New evaluations when idle (a state index moved); the verdicts on submitted plans.
WORKER_CHANNELS = (INDEX_CHANNEL, VERDICTS_CHANNEL)


def placement_metrics_options(placements: bool) -> MetricsOptions:
    """How a worker's passes record placement metrics. The pure scheduler has no clock: each
    placement's AllocationTime is measured with this one. Each placed allocation keeps its
    metrics as the text its plan carries, made straight from the selection (no PlacementMetrics
    built to be encoded and dropped again)."""
    return MetricsOptions(placements, time.perf_counter_ns, placed_metrics_text)


class Worker:
    """One scheduling loop: claim, schedule, submit, wait, complete. A worker process runs
    `num_schedulers` of them in threads (run_worker), sharing the engine and the lease renewer;
    each has its own snapshot loader (its caches are per loop) and a view of the process's one
    listener (workers/listener.py)."""

    def __init__(
        self,
        settings: Settings,
        database_url: str,
        schedulers: tuple[str, ...],
        *,
        engine: Engine | None = None,
        leases: Leases | None = None,
        listener: SharedListener | None = None,
    ) -> None:
        self.settings = settings
        self.schedulers = schedulers
        self._owned = (engine is None, leases is None)  # what close() must close: not what was shared
        self.engine = engine or make_engine(database_url, "worker", pool_size=3, pre_ping=False)
        self.leases = leases or Leases(self.engine, settings.eval_lease_s)
        self.sessions = make_sessionmaker(self.engine)
        self.loader = SnapshotLoader(self.engine)
        self.wakeup: Wakeup | ListenerView = (
            listener.view(settings.poll_interval_s, DEBOUNCE_S)
            if listener is not None
            else Wakeup(database_url, "worker", settings.poll_interval_s, channels=WORKER_CHANNELS)
        )
        self.owner = f"{holder_name()}:{uuid.uuid4().hex[:6]}"
        # What /v1/agent/schedulers shows of this loop (Nomad's worker and workload statuses),
        # published by run_worker's publisher; plain attribute writes, read from its thread.
        self.started_at = datetime.now(UTC)
        self.status = "Starting"
        self.workload_status = "Starting"
        self.placement_metrics = placement_metrics_options(settings.placement_metrics)

    def loop_state(self) -> scheduler_workers.LoopState:
        return scheduler_workers.LoopState(
            self.owner, self.schedulers, self.started_at, self.status, self.workload_status
        )

    def run(self, stop: threading.Event) -> None:
        log.info("worker started", schedulers=list(self.schedulers), owner=self.owner)
        self.status = "Started"
        next_rescue = 0.0
        backoff, streak = Backoff(), Streak("claiming evaluations", owner=self.owner)

        def step() -> float | None:
            nonlocal next_rescue
            rescue = time.monotonic() >= next_rescue
            began = time.perf_counter()
            self.workload_status = "WaitingToDequeue"
            try:
                claims = self._claim(rescue)
            except (DBAPIError, psycopg.Error) as err:  # the database is away: one line per outage
                streak.failed(err)
                self.workload_status = "Backoff"
                return backoff.next()
            streak.succeeded()
            backoff.reset()
            if rescue:
                next_rescue = time.monotonic() + RESCUE_EVERY_S
            if not claims:
                self.wakeup.wait()
                next_rescue = 0.0  # idle: look for lapsed leases on the next round
                return None
            observe(DEQUEUE_EVAL, (time.perf_counter() - began) * 1000)
            self.workload_status = "Scheduling"
            if len(claims) == 1:
                self.handle(claims[0], stop)
            else:
                self.handle_batch(claims, stop)
            return None

        self.wakeup.listen()
        try:
            guarded("worker", step, stop)  # anything unexpected: logged once, backed off, carried on
        finally:
            self.status = self.workload_status = "Stopped"
            self.close()

    def close(self) -> None:
        self.wakeup.close()
        owns_engine, owns_leases = self._owned
        if owns_leases:
            self.leases.close()
        if owns_engine:
            self.engine.dispose()

    def _claim(self, rescue: bool) -> list[Claim]:
        """The evaluations to work on next: with `rescue`, a lapsed lease first (one at a time,
        about once a second while busy); else (or when none lapsed) up to `eval_batch` ready
        ones of distinct jobs. A rescue that finds nothing claims a whole batch, not one
        evaluation: at a few batches a second (a loaded machine), one evaluation claimed alone
        each second was a large share of them, each paying a snapshot, a submit and a wait."""
        lease_s = self.settings.eval_lease_s
        if rescue:
            try:
                held = broker.claim_expired(self.engine, self.schedulers, self.owner, lease_s)
            except (IntegrityError, psycopg.errors.UniqueViolation):
                held = None  # a racing claim of the same job: claim ready ones instead
            if held is not None:
                return [held]
        return broker.claim_batch(self.engine, self.schedulers, self.owner, lease_s, self.settings.eval_batch)

    def handle(self, held: Claim, stop: threading.Event) -> None:
        keeper = self.leases.hold(held)
        try:
            self._settle(held, keeper, None, stop)
        finally:
            self.leases.release(keeper)

    def handle_batch(self, claims: list[Claim], stop: threading.Event) -> None:
        """Several evaluations claimed together: their first passes share one snapshot read and
        one submit (batch.py); then each is settled on its own, as handle() settles one. One
        that the batch could not carry (a big plan, a failure) goes the one-at-a-time way."""
        keepers = {held.evaluation.id: self.leases.hold(held) for held in claims}
        try:
            scheduling = [held for held in claims if held.evaluation.type != CORE_EVAL_TYPE]
            collecting = [held for held in claims if held.evaluation.type == CORE_EVAL_TYPE]
            firsts = first_tries(self, scheduling, keepers, stop) if len(scheduling) > 1 else {}
            # Garbage collection last: it may run for long, and the others' completions wait.
            for held in [*scheduling, *collecting]:
                self._settle(held, keepers[held.evaluation.id], firsts.get(held.evaluation.id), stop)
        finally:
            for keeper in keepers.values():
                self.leases.release(keeper)

    def _settle(self, held: Claim, keeper: Lease, first: Try | Exception | None, stop: threading.Event) -> None:
        """Schedule (or collect garbage for) one evaluation and complete it; a failure nacks it."""
        ev = held.evaluation
        bound = log.bind(eval_id=str(ev.id), job_id=ev.job_id, triggered_by=ev.triggered_by)
        try:
            if ev.type == CORE_EVAL_TYPE:
                outcome: Outcome | None = self.collect_garbage(held, keeper, stop)
            else:
                outcome = self.schedule(held, keeper, stop, first)
            if outcome is None:  # the applier completed it with the plan: nothing left to write
                bound.info("evaluation done", status="complete", completed_by="applier")
                return
            if outcome.failed_tg_allocs or outcome.max_plan_attempts or outcome.rolling_wait_s:
                with transaction(self.sessions) as session:
                    broker.complete(session, held, outcome)
            else:
                broker.complete_success(self.engine, held, outcome)
            bound.info("evaluation done", status=outcome.status, queued=outcome.queued_allocations or None)
        except LeaseLost as err:
            bound.warning("lease lost; another worker owns the evaluation now", reason=str(err))
        except ShuttingDown as err:
            bound.info("giving the evaluation back before exiting", reason=str(err))
            self._nack(held, err)
        except Exception as err:
            # The traceback is logged once, with the delivery that fails the evaluation;
            # earlier deliveries log one line, so a bad job cannot flood the log.
            if self._nack(held, err):
                bound.exception("scheduling failed at the delivery limit; evaluation failed")
            else:
                bound.warning("scheduling failed; nacking", error=f"{type(err).__name__}: {err}"[:500])

    def schedule(
        self, held: Claim, keeper: Lease, stop: threading.Event, first: Try | Exception | None = None
    ) -> Outcome | None:
        """The pass's outcome for the worker to record, or None when the applier completed the
        evaluation in the commit that applied its last plan. `first`: the first try, already
        made with a batch (or how it ended)."""
        ev = held.evaluation
        limit, failures, attempt = ATTEMPTS[ev.type], 0, 0
        while True:
            if isinstance(first, Exception):
                raise first
            tried = first or self._try(held, keeper, stop, attempt)
            first, attempt = None, tried.attempt
            applied = tried.applied
            if applied is None:  # nothing to submit
                return tried.outcome
            if applied.completed_eval:
                return None
            if not applied.partial:
                return tried.outcome
            failures = 0 if applied.progress else failures + 1
            if failures >= limit:
                return Outcome(
                    snapshot_index=tried.outcome.snapshot_index,
                    scheduled_at=tried.outcome.scheduled_at,
                    status="failed",
                    max_plan_attempts=True,
                    description=f"maximum attempts reached ({limit})",
                )

    def _try(self, held: Claim, keeper: Lease, stop: threading.Event, attempt: int) -> Try:
        """One pass on a fresh snapshot, its plan submitted and its verdict awaited."""
        ev = held.evaluation
        scheduled_at = datetime.now(UTC)
        snapshot = self.loader.load(ev)
        result, submitted = self._pass(held, snapshot, attempt, keeper, stop)
        attempt += len(submitted)
        outcome = outcome_of(result, snapshot.index, scheduled_at)
        if result.plan.is_noop and not submitted:
            return Try(outcome, None, attempt)
        with timed(SUBMIT_PLAN):
            if not result.plan.is_noop:
                attempt += 1
                # A plan sent in chunks is completed by the worker, once every chunk's verdict
                # is in: the applier sees one chunk at a time, never the pass as a whole.
                completion = None if submitted else completion_of(outcome)
                submitted.append(
                    plans.submit(self.engine, held, attempt, result.plan, ev.job_id, ev.namespace, completion)
                )
            applied = self._await_verdicts(held, submitted, keeper, stop)
        return Try(outcome, applied, attempt)

    def _pass(
        self, held: Claim, snapshot: Snapshot, attempt: int, keeper: Lease, stop: threading.Event
    ) -> tuple[SchedulerResult, list[int]]:
        """The scheduling pass, and the plans it already submitted: each chunk of a big plan is
        submitted as soon as the pass yields it (with the next attempt number, the submit's
        idempotency key), so the applier writes it while the pass makes the next. Between two
        chunks, a lapsed lease or a shutdown ends the pass: the chunks applied so far stay (the
        next delivery reconciles against them), the ones still waiting are refused. The pass's
        timing includes those submits."""
        ev = held.evaluation
        submitted: list[int] = []
        parts = stream(
            ev,
            snapshot,
            now_ns=time.time_ns(),
            chunk_placements=self.settings.plan_chunk_placements,
            metrics=self.placement_metrics,
        )
        with timed(INVOKE_SCHEDULER, type=ev.type):
            while True:
                try:
                    chunk = next(parts)
                except StopIteration as done:
                    result: SchedulerResult = done.value
                    return result, submitted
                number = attempt + len(submitted) + 1
                submitted.append(plans.submit(self.engine, held, number, chunk, ev.job_id, ev.namespace))
                if keeper.lost.is_set():
                    raise LeaseLost(f"evaluation {ev.id}: lease lapsed between the chunks of its plan")
                if stop.is_set():
                    raise ShuttingDown(f"stopping between the chunks of the plan for {ev.id}")

    def collect_garbage(self, held: Claim, keeper: Lease, stop: threading.Event) -> Outcome:
        """A core evaluation: run its collectors batch by batch while the lease holds."""
        ev = held.evaluation

        def still_ours() -> None:
            if keeper.lost.is_set():
                raise LeaseLost(f"evaluation {ev.id}: lease lapsed during garbage collection")
            if stop.is_set():
                raise ShuttingDown(f"stopping during garbage collection {ev.job_id}")

        started = datetime.now(UTC)
        report = run_core_eval(
            self.sessions,
            ev.id,
            self.owner,
            self.settings.gc_batch_size,
            Thresholds.from_settings(self.settings),
            still_ours,
            Pacer(self.settings.gc_slow_batch_pause),
        )
        removed = sum(report.removed.values())
        return Outcome(snapshot_index=0, scheduled_at=started, description=f"removed {removed} rows")

    def _await_verdicts(
        self, held: Claim, plan_ids: list[int], keeper: Lease, stop: threading.Event
    ) -> plans.AppliedPlan:
        """The verdicts on the pass's plans (one, or a big plan's chunks), taken together."""
        ev = held.evaluation
        waiting, verdicts = list(plan_ids), []
        told: dict[int, plans.AppliedPlan] = {}
        while True:
            # No verdict can exist before the applier's commit, whose NOTIFY ends this wait (or
            # the poll interval does, if the notification is lost): nothing to read before it.
            # A chunk's notification that came while the pass went on is still pending here.
            # The notification carries the verdicts: a plan told there is not read again.
            payloads = self.wakeup.wait(
                channel=VERDICTS_CHANNEL, wanted=lambda ids: any(verdict_for(p, ids) for p in waiting)
            )
            told |= plans.told_verdicts(payloads)
            # The verdict first: an applier that completed the evaluation with the plan cleared
            # its token, so the lease keeper's next renewal fails; that is no lost lease.
            while waiting and (applied := told.get(waiting[0]) or plans.result(self.engine, waiting[0])) is not None:
                if applied.fenced:
                    raise LeaseLost(f"plan {waiting[0]} refused: evaluation {ev.id} is no longer ours")
                verdicts.append(applied)
                waiting.pop(0)  # the applier takes one evaluation's plans in submit order
            if not waiting:
                return plans.combined(verdicts)
            if keeper.lost.is_set():
                raise LeaseLost(f"evaluation {ev.id}: lease lapsed while waiting for plan {waiting[0]}")
            if stop.is_set():
                # Shutting down with no verdict yet: give the evaluation back (the nack clears
                # the token, so the applier will refuse this plan) instead of holding it.
                raise ShuttingDown(f"stopping while plan {waiting[0]} waits for the applier")

    def _nack(self, held: Claim, err: Exception) -> bool:
        """Give the evaluation back; True when that failed it for good."""
        try:
            with transaction(self.sessions) as session:
                return broker.nack(session, held, f"{type(err).__name__}: {err}")
        except LeaseLost:
            return False
        except Exception:
            log.exception("nack failed; the lease will lapse and another worker will rescue the evaluation")
            return False


def verdict_for(plan_id: int, payload: str) -> bool:
    """Whether a verdicts notification may concern the plan: its entries start with their plan's
    ID (`id:...`, or a bare ID from an applier of an earlier release), or it is empty when they
    did not fit (then it may concern any plan)."""
    return concerns(payload, {str(plan_id)})


def run_worker(settings: Settings, database_url: str, schedulers: tuple[str, ...], stop: threading.Event) -> None:
    """`settings.num_schedulers` scheduling loops, each claiming its own evaluation (the broker
    keeps one evaluation in flight per job). The first runs on this thread, the others on their
    own; all share one engine, one lease renewer and one listener. The pool keeps a connection per loop, one
    for the renewer and one spare (a lone loop had three), and overflows as far again."""
    loops = settings.num_schedulers
    engine = make_engine(database_url, "worker", pool_size=loops + 2, pre_ping=False)
    leases = Leases(engine, settings.eval_lease_s)
    listener = SharedListener(database_url, "worker", WORKER_CHANNELS)
    workers = [
        Worker(settings, database_url, schedulers, engine=engine, leases=leases, listener=listener)
        for _ in range(loops)
    ]
    threads = [
        threading.Thread(target=w.run, args=(stop,), name=f"scheduler-{i}", daemon=True)
        for i, w in enumerate(workers[1:], start=1)
    ]
    try:
        with publishing_loops(engine, workers):
            for thread in threads:
                thread.start()
            workers[0].run(stop)
            for thread in threads:
                thread.join()
    finally:
        leases.close()
        listener.close()
        engine.dispose()


@contextmanager
def publishing_loops(engine: Engine, workers: list[Worker]) -> Iterator[None]:
    """Publish the loops' states every PUBLISH_EVERY_S while the block runs (a daemon thread),
    and withdraw them when it ends. A failed publish is logged and retried: it never stops work."""
    sessions = make_sessionmaker(engine)
    process = process_key("worker")
    done = threading.Event()

    def once(withdraw: bool = False) -> None:
        try:
            with transaction(sessions) as session:
                if withdraw:
                    scheduler_workers.withdraw(session, process)
                else:
                    scheduler_workers.publish(session, process, [w.loop_state() for w in workers], datetime.now(UTC))
        except (DBAPIError, psycopg.Error) as err:
            log.warning("could not publish the scheduling loops", error=str(err).splitlines()[0])

    def loop() -> None:
        once()
        while not done.wait(PUBLISH_EVERY_S):
            once()

    thread = threading.Thread(target=loop, name="loops-publisher", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
        once(withdraw=True)
