"""The plan applier's transaction, one batch of plans at a time (group commit): fence the term
once, check every plan in order against current state plus what the plans before it in the
batch took (plan_check), write the accepted parts of all of them with few statements
(plan_writes), complete the evaluations whose last plan applied in full, record every result,
and let the caller commit once. Runs only on the lock holder's connection, fenced by its term."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import psycopg
import structlog
from psycopg.rows import dict_row
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session

from app.metrics.timings import PLAN_EVALUATE, PLAN_NODE_REJECTED, count, timed
from app.pipeline.codecs.plan_codec import decode_plan
from app.pipeline.metrics_columns import text_columns
from app.pipeline.plan_apply import plan_deployments
from app.pipeline.plan_apply.plan_check import Verdict, check
from app.pipeline.plan_apply.plan_overlay import Effects, effects, overlay
from app.pipeline.plan_apply.plan_state import binary_ids, send_reads
from app.pipeline.plan_apply.plan_writes import (
    RESULT_COLUMNS,
    Checked,
    Known,
    encoded,
    frees,
    raw,
    result_columns,
    write_batch,
)
from app.pipeline.plans import AppliedPlan, told_entry
from app.store.sql import psycopg_query
from app.structs import Plan
from app.wire.plan import PlanRowJson

ROLE = "applier"
# The plan ids as a bigint[] in binary: psycopg dumps a list in text one element at a time.
COMPLETE_EVALS = psycopg_query("complete_evals").replace("%(plans)s", "%(plans)b")
log = structlog.get_logger(__name__)


class VerdictMismatch(Exception):
    """A due plan's evaluation was not completed: the batch is undone (see _confirm_completed)."""


class Deposed(Exception):
    """This process no longer holds the applier term: it must stop writing."""


@dataclass(frozen=True)
class Pending:
    """A submitted plan as the applier takes it."""

    id: int
    plan: Plan
    token: uuid.UUID
    namespace: str
    job_id: str
    completes: bool  # the plan carries its evaluation's completion (the worker's last plan)


@dataclass(frozen=True)
class Decided:
    """A plan's verdict and what it records."""

    pending: Pending
    verdict: Verdict
    fenced: bool = False
    completed: bool = False


def apply_next(session: Session, term: int) -> int | None:
    """Apply the next pending plan alone; returns its id, or None when the queue is empty."""
    applied = apply_batch(session, term, 1)
    return applied[0] if applied else None


def apply_batch(session: Session, term: int, limit: int) -> list[int]:
    """Apply up to `limit` pending plans in this transaction; returns their ids (the live ones in
    the order they were checked, then those whose lease had moved on), empty when the queue is."""
    prepared = prepare(raw(session), limit)
    return commit_batch(session, term, prepared) if prepared is not None else []


@dataclass(frozen=True)
class Prepared:
    """A batch checked and ready to write: every plan taken, the ones whose lease was live when
    read (checked, in order), and what their verdicts change (for the batch checked after it
    while this one commits)."""

    pending: list[Pending]
    live: list[Pending]
    checked: list[Checked]  # live's plans with their verdicts, in the same order
    known: Known
    effects: Effects

    @property
    def plan_ids(self) -> list[int]:
        return [p.id for p in self.pending]

    @property
    def placements(self) -> int:
        """How many allocations the batch's plans ask for."""
        return sum(len(allocs) for p in self.pending for allocs in p.plan.node_allocation.values())


@dataclass(frozen=True)
class InFlight:
    """A batch handed to the writer and not yet known to be committed."""

    plan_ids: list[int]
    effects: Effects


def prepare(pg: psycopg.Connection[Any], limit: int, in_flight: Sequence[InFlight] = ()) -> Prepared | None:
    """Take up to `limit` pending plans (none of `in_flight`'s) and check them in order against the
    current state, with the effects of every in-flight batch this read does not see yet laid over
    it; None when the queue is empty. Reads only: the writing transaction fences and locks.
    The pipeline calls it in a REPEATABLE READ transaction, so every read shares one snapshot
    and the visibility test holds for all of them."""
    exclude = [i for batch in in_flight for i in batch.plan_ids]
    text = text_columns(pg)  # asked at every batch until found: a plan may carry its metrics beside
    rows = pg.cursor(row_factory=dict_row).execute(
        psycopg_query("next_plans" if text else "next_plans_before_0037"),
        {"limit": limit, "exclude": exclude},
        prepare=True,
    )
    pending = [_pending(r) for r in cast(list[PendingRow], rows.fetchall())]  # next_plans' columns
    if not pending:
        return None
    with pg.pipeline():  # one round trip for the leases, the state and the visibility test
        pg.execute(psycopg_query("custom_plans"))
        leases = pg.execute(binary_ids("evals_owned"), {"ids": [p.plan.eval_id for p in pending]}, prepare=True)
        reads = send_reads(pg, [p.plan for p in pending])
        pg.execute(psycopg_query("generic_plans"))
        decided = (
            pg.execute(psycopg_query("plans_decided"), {"ids": [i for b in in_flight for i in b.plan_ids]})
            if in_flight
            else None
        )
    owned: dict[uuid.UUID, uuid.UUID] = dict(leases.fetchall())
    live = [p for p in pending if owned.get(p.plan.eval_id) == p.token]
    with timed(PLAN_EVALUATE):
        state = reads.state()
        known = Known(
            in_db=set(state.touched),
            classes={n: node.computed_class for n, node in state.nodes.items()},
            deployments={},
            text_metrics=text,
        )
        visible = {row[0] for row in decided.fetchall()} if decided is not None else set()
        for batch in in_flight:
            # One commit records every plan of a batch: any of them recorded means all are.
            if visible.isdisjoint(batch.plan_ids):
                overlay(state, batch.effects)
        checked = [Checked(p.plan, check(p.plan, state)) for p in live]
    checked = [encoded(c, known) for c in checked]  # the writer only appends the index
    return Prepared(pending, live, checked, known, effects(state, (c.verdict for c in checked)))


def commit_batch(session: Session, term: int, prepared: Prepared) -> list[int]:
    """Write a prepared batch in the caller's transaction (on the term holder's connection):
    fence the term, lock the batch's evaluations and fence every plan whose lease moved on since
    the check, write the accepted parts, complete the evaluations whose last plan applied in full
    and record every result. Returns the plan ids, as apply_batch does."""
    pg = raw(session)
    plans = [p.plan for p in prepared.pending]
    tables = ["allocations", "evaluations"]  # the plans' results need no index: no blocking query watches them
    if any(p.deployment or p.deployment_updates for p in plans):
        tables += ["deployments", "jobs"]  # a successful deployment marks its job version stable
    if any(a.claims for p in plans for allocs in p.node_allocation.values() for a in allocs):
        tables.append("host_volume_claims")  # a sticky group's new allocation claims its volume
    # The batch's writes are undone together if the database refuses them (_write). Preemptions
    # need the ORM's own savepoint (_savepoint); any other batch's is set in this round trip.
    marked = not any(c.verdict.preemptions for c in prepared.checked)
    with pg.pipeline():  # one round trip for the index, the fence, the leases and the deployments
        taken = pg.execute(psycopg_query("take_index"), {"tables": tables, "notify": True}, prepare=True)
        fence = pg.execute(psycopg_query("fence_term"), {"role": ROLE, "term": term}, prepare=True)
        leases = pg.execute(binary_ids("evals_still_owned"), {"ids": [p.eval_id for p in plans]})
        deployed = plan_deployments.send_read(pg, plan_deployments.deployment_ids(plans))
        if marked:
            pg.execute(BATCH_SAVEPOINT)
    index = _index(taken.fetchone(), tables)
    if fence.fetchone() is None:
        raise Deposed(f"applier term {term} is no longer current")
    owned: dict[uuid.UUID, uuid.UUID] = dict(leases.fetchall())
    order, refused = _still_owned(prepared, owned)
    kept = [(p, c) for p, c in order if p.id not in refused]
    known = dataclasses.replace(
        prepared.known, deployments=plan_deployments.stored_from_rows(deployed.fetchall() if deployed else ())
    )
    verdicts = _write(session, [c for _, c in kept], index, known, marked)
    by_plan = {p.id: v for (p, _), v in zip(kept, verdicts, strict=True)} | refused
    owned_ids = {p.id for p, _ in order}
    decided = [Decided(p, by_plan[p.id]) for p, _ in order]
    decided += [Decided(p, Verdict(), fenced=True) for p in prepared.pending if p.id not in owned_ids]
    with pg.pipeline():  # one round trip for the completions and the statuses
        completing = _send_completion(pg, decided)
        _send_statuses(pg, decided, index)
    decided = _completed(decided, {row[0] for row in completing.fetchall()} if completing is not None else set())
    _confirm_completed(decided)
    _copy_results(pg, decided, index, term, {p.id: c for p, c in order})
    count(PLAN_NODE_REJECTED, sum(len(d.verdict.rejected) for d in decided))
    return [d.pending.id for d in decided]


def _still_owned(
    prepared: Prepared, owned: dict[uuid.UUID, uuid.UUID]
) -> tuple[list[tuple[Pending, Checked]], dict[int, Verdict]]:
    """The checked plans whose lease is still live under the lock, in check order, and which of
    them are refused whole. A plan fenced since the check is not written; if it freed room (a
    stop, an eviction, an in-place update), the plans checked after it may have used that room,
    which stays taken: they are refused on all their nodes, and their workers re-plan."""
    order: list[tuple[Pending, Checked]] = []
    refused: dict[int, Verdict] = {}
    freed_by_a_fenced_plan = False
    for p, c in zip(prepared.live, prepared.checked, strict=True):
        if owned.get(p.plan.eval_id) != p.token:
            freed_by_a_fenced_plan = freed_by_a_fenced_plan or frees(c.verdict, prepared.known.in_db)
            continue
        order.append((p, c))
        if freed_by_a_fenced_plan and c.verdict.writes:
            refused[p.id] = Verdict(rejected=sorted(c.verdict.nodes))
    return order, refused


class PendingRow(PlanRowJson):
    """A row of next_plans: the plan's columns, its id, its evaluation's lease token, and whether
    it carries its evaluation's completion."""

    id: int
    eval_token: uuid.UUID
    completes: bool


def _pending(row: PendingRow) -> Pending:
    return Pending(row["id"], decode_plan(row), row["eval_token"], row["namespace"], row["job_id"], row["completes"])


def _index(taken: tuple[Any, ...] | None, tables: list[str]) -> int:
    """The batch's state index (app.db.state_index.next_index, sent in the batch's pipeline)."""
    if taken is None or taken[1] != len(set(tables)):
        raise RuntimeError(f"take_index: some of {tables} are not state index names")
    return int(taken[0])


# What the database raises when it refuses a plan's writes: the overcommit trigger and the
# constraints (IntegrityError), and a value a column cannot take (DataError).
REFUSED = (IntegrityError, DataError, psycopg.errors.IntegrityError, psycopg.errors.DataError)


# Set before a batch's writes when the batch has no preemptions; rolled back to if the database
# refuses them, and never released (the commit ends it: a RELEASE would be one more round trip).
BATCH_SAVEPOINT = "SAVEPOINT applier_batch"


def _write(session: Session, checked: list[Checked], index: int, known: Known, marked: bool) -> list[Verdict]:
    """Write the whole batch under one savepoint (BATCH_SAVEPOINT when `marked`, else its own);
    if the database refuses it (the overcommit trigger, a constraint: our own check let
    something through it should not have), write the plans one savepoint each, and refuse whole
    every plan whose writes fail, so its worker re-plans from fresh state instead of failing the
    same plan on every retry. Once a refused plan would have freed room, every later plan that
    writes is refused too: its check may have counted on that room (host ports have no database
    backstop)."""
    try:
        if marked:
            write_batch(session, checked, index, known)
        else:
            with _savepoint(session, checked):
                write_batch(session, checked, index, known)
        return [c.verdict for c in checked]
    except REFUSED:
        if marked:
            raw(session).execute("ROLLBACK TO SAVEPOINT applier_batch")
        log.warning("database refused a batch's writes; writing its plans one by one", plans=len(checked))
    verdicts = []
    freed_by_a_refused_plan = False
    for item in checked:
        if freed_by_a_refused_plan and item.verdict.writes:
            verdicts.append(Verdict(rejected=sorted(item.verdict.nodes)))
            continue
        try:
            with _savepoint(session, [item]):
                outcome = write_batch(session, [item], index, known)
            # The plans after it build on the deployments it created or advanced.
            known = dataclasses.replace(known, deployments=plan_deployments.settled(outcome))
            verdicts.append(item.verdict)
        except REFUSED:
            log.error("database refused plan writes; rejecting the plan", eval_id=str(item.plan.eval_id), exc_info=True)
            verdicts.append(Verdict(rejected=sorted(item.verdict.nodes)))
            freed_by_a_refused_plan = frees(item.verdict, known.in_db)
    return verdicts


@contextmanager
def _savepoint(session: Session, batch: Sequence[Checked]) -> Iterator[None]:
    """A savepoint on the raw connection (SQLAlchemy's begin_nested costs an ORM flush and its
    bookkeeping on every batch). Preemptions are the exception: their follow-up evaluations are
    ORM objects, which only the ORM's own savepoint flushes inside it and forgets on a rollback."""
    if any(item.verdict.preemptions for item in batch):
        with session.begin_nested():
            yield
        return
    with raw(session).transaction():
        yield


def _send_completion(pg: psycopg.Connection[Any], decided: list[Decided]) -> psycopg.Cursor[Any] | None:
    """Complete, in this same commit and one statement, each evaluation whose last plan (the
    worker sent its completion) applied in full. The tokens were checked and the evaluation rows
    are locked, so the fenced UPDATE finds them; which ones it completed is still read back
    (_completed), never assumed."""
    due = [d.pending.id for d in decided if _due(d)]
    return pg.execute(COMPLETE_EVALS, {"plans": due}, prepare=True) if due else None


def _due(d: Decided) -> bool:
    """The plan carries its evaluation's completion, applied in full and was not fenced."""
    return d.pending.completes and not d.verdict.rejected and not d.fenced


def _completed(decided: list[Decided], done: set[uuid.UUID]) -> list[Decided]:
    """`decided` with each due plan whose evaluation the completion did complete (`done`) marked
    so. A fenced plan of the same evaluation as a due one is never marked: it completed nothing."""
    return [
        Decided(d.pending, d.verdict, d.fenced, completed=_due(d) and d.pending.plan.eval_id in done) for d in decided
    ]


def _send_statuses(pg: psycopg.Connection[Any], decided: list[Decided], index: int) -> None:
    """Every plan's status in one UPDATE, with the NOTIFY its commit delivers: each plan's
    verdict as the worker needs it (plans.told_verdicts), so the worker reads nothing. Sent in
    the completions' round trip, so the payload says a due plan completed its evaluation before
    the completion's answer is in: commit_batch checks that it did (_confirm_completed)."""
    pg.execute(
        psycopg_query("plan_record_status"),
        {
            "ids": [d.pending.id for d in decided],
            "statuses": ["rejected" if d.fenced else d.verdict.status for d in decided],
            "verdicts": ",".join(_verdict_entry(d, index) for d in decided),
        },
        prepare=True,
    )


def _verdict_entry(d: Decided, index: int) -> str:
    """The plan's entry in the verdicts notification: the counts plan_verdict computes from the
    result this batch records, and the completion it is due."""
    applied = AppliedPlan(
        placed=sum(len(items) for items in d.verdict.accepted.values()),
        stopped=sum(len(items) for items in d.verdict.stops.values()),
        rejected_nodes=len(d.verdict.rejected),
        refresh_index=index if d.verdict.rejected else 0,
        fenced=d.fenced,
        completed_eval=_due(d),
    )
    return told_entry(d.pending.id, applied, refused=d.fenced or d.verdict.status == "rejected")


def _confirm_completed(decided: list[Decided]) -> None:
    """Every due plan's evaluation was completed, as the verdicts' notification already says. Its
    lease was checked and its row locked in this transaction, so nothing else can have changed
    it; should that ever fail, the batch is undone (its notification with it) rather than tell a
    worker its evaluation is done when it is not."""
    missed = [d.pending.id for d in decided if _due(d) and not d.completed]
    if missed:
        raise VerdictMismatch(f"plans {missed} were due to complete their evaluations, which the completion did not")


def _copy_results(
    pg: psycopg.Connection[Any], decided: list[Decided], index: int, term: int, checked: dict[int, Checked]
) -> None:
    """Every plan's result in one COPY. A result is written from its verdict's columns as the
    check encoded them (`checked`, by plan id) unless the write changed the verdict (a fence, a
    refusal)."""
    rows = []
    for d in decided:
        item = checked.get(d.pending.id)
        head = (
            item.result if item is not None and item.result and item.verdict is d.verdict else result_columns(d.verdict)
        )
        refresh = index if d.verdict.rejected else 0
        rows.append(f"{head}\t{d.pending.id}\t{term}\t{refresh}\t{index}\t{'t' if d.completed else 'f'}\n")
    with pg.cursor().copy(f"COPY plan_results ({', '.join(RESULT_COLUMNS)}) FROM STDIN") as copy:
        copy.write("".join(rows))
