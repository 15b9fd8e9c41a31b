"""The evaluation broker, in Postgres: claim with a lease and fencing token, renew, complete
(coalescing the job's other pending evaluations), nack with Nomad's back-off, and fail with a
follow-up after the delivery limit."""

from __future__ import annotations

import functools
import json
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import psycopg.rows
from sqlalchemy import Engine, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.engines import autocommitted
from app.db.state_index import next_index
from app.models import Evaluation, Job
from app.pipeline.codecs.metrics_codec import metrics_to_json
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.sql import psycopg_query, query
from app.structs import Evaluation as EvalStruct
from app.structs import PlacementMetrics
from app.values.ids import new_id

DELIVERY_LIMIT = 3
MAX_CLAIM_BATCH = 64  # eval_batch's bound
BLOCKED_DESCRIPTION = "created to place remaining allocations"  # Nomad's words
CONFLICTS_DESCRIPTION = "created due to placement conflicts"
NACK_INITIAL_DELAY = timedelta(seconds=1)
NACK_SUBSEQUENT_DELAY = timedelta(seconds=20)
FOLLOW_UP_BASELINE = timedelta(minutes=1)
FOLLOW_UP_RANGE = timedelta(minutes=5)
BLOCKED_TRIGGERS = ("queued-allocs", "max-plan-attempts")


class LeaseLost(Exception):
    """The evaluation's lease expired and another worker may own it now: stop, write nothing."""


@dataclass(frozen=True)
class Claim:
    evaluation: EvalStruct
    token: uuid.UUID
    delivery_count: int


@dataclass(frozen=True)
class Outcome:
    """How a scheduling pass ended, for complete()."""

    snapshot_index: int
    status: str = "complete"
    description: str = ""
    failed_tg_allocs: dict[str, PlacementMetrics] = field(default_factory=dict)
    queued_allocations: dict[str, int] = field(default_factory=dict)
    class_eligibility: dict[str, bool] = field(default_factory=dict)
    escaped_computed_class: bool = False
    max_plan_attempts: bool = False
    # A rolling system update paused at max_parallel: a `rolling-update` evaluation this much later.
    rolling_wait_s: float = 0.0
    # System jobs: the nodes too full to place on; their blocked evaluation waits on these only.
    blocked_nodes: frozenset[uuid.UUID] = frozenset()
    # When the pass read its snapshot: a delayed evaluation due only after that was not served.
    scheduled_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def claim(engine: Engine, types: Iterable[str], owner: str, lease_s: float, *, rescue: bool = True) -> Claim | None:
    """Take the next evaluation: with `rescue`, a lapsed lease first, else the best ready one.
    Rescue is a separate statement, so busy workers ask for it about once a second, not per claim."""
    if rescue:
        try:
            rescued = claim_expired(engine, types, owner, lease_s)
        except (IntegrityError, psycopg.errors.UniqueViolation):
            return None  # another worker claimed an evaluation of the same job at the same moment
        if rescued is not None:
            return rescued
    ready = claim_batch(engine, types, owner, lease_s, 1)
    return ready[0] if ready else None


def claim_expired(engine: Engine, types: Iterable[str], owner: str, lease_s: float) -> Claim | None:
    """Take over one evaluation whose lease lapsed (under the delivery limit), with a new token
    that fences its old worker out; None when there is none. Raises the unique violation of a
    racing claim of the same job (claim() reads that as nothing to claim)."""
    token = uuid.uuid4()
    params = {"types": list(types), "owner": owner, "lease_s": lease_s, "delivery_limit": DELIVERY_LIMIT}
    row = _claim_statement(engine, "claim_expired", {**params, "token": token})
    return None if row is None else Claim(_eval_struct(row), token, int(row["delivery_count"]))


def claim_batch(engine: Engine, types: Iterable[str], owner: str, lease_s: float, batch: int) -> list[Claim]:
    """Up to `batch` ready evaluations of distinct jobs in one statement, best first (priority,
    then age), each with its own token. Lapsed leases are claim()'s (with `rescue`), one at a time."""
    params = {"types": list(types), "owner": owner, "lease_s": lease_s}
    try:
        with autocommitted(engine) as pg:
            cursor: psycopg.Cursor[dict[str, Any]] = pg.cursor(row_factory=psycopg.rows.dict_row)
            rows = cursor.execute(claim_ready_sql(batch), params, prepare=True).fetchall()
    except psycopg.errors.UniqueViolation:
        return []  # another worker claimed an evaluation of one of these jobs at the same moment
    rows.sort(key=lambda r: (-r["priority"], r["create_index"]))
    return [Claim(_eval_struct(r), r["lease_token"], int(r["delivery_count"])) for r in rows]


@functools.cache
def claim_ready_sql(batch: int) -> str:
    """claim_ready with its batch size written in: a LIMIT that is a parameter makes Postgres
    plan the statement anew on every call (a generic plan, blind to the limit, never wins
    against the custom ones), which doubled a claim's cost. One statement per batch size, each
    prepared once: a worker uses two (1 and eval_batch)."""
    if not 1 <= batch <= MAX_CLAIM_BATCH:
        raise ValueError(f"claim batch {batch} is outside 1..{MAX_CLAIM_BATCH}")
    return psycopg_query("claim_ready").replace("LIMIT %(batch)s", f"LIMIT {int(batch)}")


def _claim_statement(engine: Engine, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """One statement, autocommitted: one round trip and no transaction left open. Driven on the
    raw psycopg connection: this runs for every evaluation, on every worker.

    The statement switches its own commit to asynchronous (set_config in the SQL). A claim is a
    lease, not state: Nomad's broker keeps it in memory only. If a server crash takes a claim
    back, the evaluation is pending and unleased again, and the worker that held it is fenced
    out, because its plan and its completion check the token in synchronous commits. Any later
    synchronous commit (each plan, each completion) also makes every claim before it durable,
    WAL being flushed in order. So claims never wait on an fsync, whatever else (GC above all)
    fills the WAL."""
    with autocommitted(engine) as pg:
        cursor: psycopg.Cursor[dict[str, Any]] = pg.cursor(row_factory=psycopg.rows.dict_row)
        row: dict[str, Any] | None = cursor.execute(psycopg_query(name), params).fetchone()
        return row


def _eval_struct(row: Any) -> EvalStruct:
    return EvalStruct(
        id=row["id"],
        namespace=row["namespace"],
        job_id=row["job_id"],
        type=row["type"],
        priority=row["priority"],
        triggered_by=row["triggered_by"],
        job_modify_index=row["job_modify_index"],
        status=row["status"],
        node_id=row["node_id"],
        deployment_id=row["deployment_id"],
        annotate_plan=row["annotate_plan"],
    )


def renew(engine: Engine, held: Claim, lease_s: float) -> bool:
    """Extend the lease; False means it lapsed and was (or may be) taken over."""
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL synchronous_commit = off"))  # a lost renewal is re-sent
        row = conn.execute(query("renew_lease"), {"id": held.evaluation.id, "token": held.token, "lease_s": lease_s})
        return row.first() is not None


def complete_success(engine: Engine, held: Claim, outcome: Outcome) -> None:
    """complete() for the common case, a pass that placed everything: the index's logging and
    the completion in one autocommitted statement (one round trip, one implicit transaction,
    prepared on the connection)."""
    if outcome.failed_tg_allocs or outcome.max_plan_attempts or outcome.status != "complete" or outcome.rolling_wait_s:
        raise ValueError("complete_success is only for passes without placement failures or follow-ups")
    ev = held.evaluation
    params = {
        "description": outcome.description,
        "snapshot_index": outcome.snapshot_index,
        "queued": json.dumps(outcome.queued_allocations),
        "eligibility": json.dumps(outcome.class_eligibility),
        "escaped": outcome.escaped_computed_class,
        "eval_id": ev.id,
        "token": held.token,
        "namespace": ev.namespace,
        "job_id": ev.job_id,
        "scheduled_at": outcome.scheduled_at,
    }
    with autocommitted(engine) as pg:
        row = pg.execute(psycopg_query("complete_eval_success"), params, prepare=True).fetchone()
    if row is None or row[1] != 1:
        raise RuntimeError("take_index refused: 'evaluations' is not a state index name")
    if not row[0]:
        raise LeaseLost(f"evaluation {ev.id}: lease lost before completion")


def complete(session: Session, held: Claim, outcome: Outcome) -> None:
    """Record the pass (fenced by the token), cancel the job's pending evals it already served,
    and keep exactly one blocked evaluation for what could not be placed."""
    # No NOTIFY: nothing waits on a completion (blocking queries poll within 250 ms), and a
    # NOTIFY in every commit costs about half the commit rate.
    index = next_index(session, ["evaluations"], notify=False)
    ev = held.evaluation
    failing = bool(outcome.failed_tg_allocs) or outcome.max_plan_attempts
    reblock = bool(outcome.failed_tg_allocs) and ev.triggered_by == "queued-allocs" and not outcome.max_plan_attempts
    row = session.execute(
        query("complete_eval"),
        {
            "status": "blocked" if reblock else outcome.status,
            # Blocked again: it still waits to place what remains (Nomad's reblocked eval keeps it).
            "description": BLOCKED_DESCRIPTION if reblock else outcome.description,
            "snapshot_index": outcome.snapshot_index,
            "failed": json.dumps({g: metrics_to_json(m) for g, m in outcome.failed_tg_allocs.items()}),
            "queued": json.dumps(outcome.queued_allocations),
            "eligibility": json.dumps(outcome.class_eligibility),
            "escaped": outcome.escaped_computed_class,
            "index": index,
            "eval_id": ev.id,
            "token": held.token,
            "namespace": ev.namespace,
            "job_id": ev.job_id,
            "cancel_blocked": not failing and outcome.status == "complete",
            "scheduled_at": outcome.scheduled_at,
        },
    ).one()
    if not row.finished:
        raise LeaseLost(f"evaluation {ev.id}: lease lost before completion")
    if reblock:
        _release_if_missed(session, ev.id, outcome, index)
    elif failing:
        _upsert_blocked(session, ev, outcome, index)
    # The next batch of a rolling system update goes on even if some node could not take this one.
    if outcome.rolling_wait_s and not outcome.max_plan_attempts:
        _rolling_followup(session, ev, outcome.rolling_wait_s, index)


def _follow_up(ev: EvalStruct, trigger: str, status: str) -> EvalRequest:
    """An evaluation a pass leaves behind for the same job."""
    return EvalRequest(
        namespace=ev.namespace,
        job_id=ev.job_id,
        job_type=ev.type,
        priority=ev.priority,
        triggered_by=trigger,
        job_modify_index=ev.job_modify_index,
        status=status,
    )


def _rolling_followup(session: Session, ev: EvalStruct, wait_s: float, index: int) -> None:
    """Nomad's NextRollingEval: the next batch of a rolling system update, `stagger` from now."""
    followup = insert_eval(session, _follow_up(ev, "rolling-update", "pending"), index)
    followup.previous_eval = ev.id
    followup.wait_until = datetime.now(UTC) + timedelta(seconds=wait_s)
    session.flush()
    session.execute(update(Evaluation).where(Evaluation.id == ev.id).values(next_eval=followup.id))


def _upsert_blocked(session: Session, ev: EvalStruct, outcome: Outcome, index: int) -> None:
    trigger = "max-plan-attempts" if outcome.max_plan_attempts else "queued-allocs"
    blocked = session.scalars(
        select(Evaluation)
        .where(Evaluation.namespace == ev.namespace, Evaluation.job_id == ev.job_id, Evaluation.status == "blocked")
        .with_for_update()
    ).first()
    if blocked is None:
        blocked = insert_eval(session, _follow_up(ev, trigger, "blocked"), index)
    blocked.triggered_by = trigger
    blocked.previous_eval = ev.id
    blocked.failed_tg_allocs = {g: metrics_to_json(m) for g, m in outcome.failed_tg_allocs.items()}
    blocked.queued_allocations = outcome.queued_allocations
    blocked.class_eligibility = outcome.class_eligibility
    blocked.escaped_computed_class = outcome.escaped_computed_class
    blocked.blocked_nodes = sorted(outcome.blocked_nodes) or None
    blocked.snapshot_index = outcome.snapshot_index
    blocked.status_description = CONFLICTS_DESCRIPTION if outcome.max_plan_attempts else BLOCKED_DESCRIPTION
    blocked.modify_index = index
    blocked.modify_time = datetime.now(UTC)
    session.flush()
    session.execute(update(Evaluation).where(Evaluation.id == ev.id).values(blocked_eval=blocked.id))
    if not outcome.max_plan_attempts:
        _release_if_missed(session, blocked.id, outcome, index)


def _release_if_missed(session: Session, eval_id: uuid.UUID, outcome: Outcome, index: int) -> None:
    """Capacity that appeared after the snapshot would never wake this eval: requeue it now.
    A system eval only counts capacity on the nodes it waits on, as only those wake it."""
    if outcome.blocked_nodes:
        missed = session.execute(
            query("missed_node_unblock"),
            {"snapshot_index": outcome.snapshot_index, "node_ids": sorted(outcome.blocked_nodes)},
        ).scalar_one()
    else:
        missed = session.execute(
            query("missed_unblock"),
            {
                "snapshot_index": outcome.snapshot_index,
                "escaped": outcome.escaped_computed_class,
                "eligibility": json.dumps(outcome.class_eligibility),
            },
        ).scalar_one()
    if missed:
        session.execute(
            update(Evaluation)
            .where(Evaluation.id == eval_id, Evaluation.status == "blocked")
            .values(
                status="pending",
                status_description="capacity changed while scheduling",
                modify_index=index,
                delivery_count=0,
            )
        )


def nack(session: Session, held: Claim, reason: str) -> bool:
    """Give the evaluation back: Nomad's back-off, or failure plus follow-up at the limit.
    Returns True when this was the last delivery and the evaluation failed with ``reason``."""
    index = next_index(session, ["evaluations"])
    row = session.execute(
        select(Evaluation.delivery_count)
        .where(
            Evaluation.id == held.evaluation.id, Evaluation.lease_token == held.token, Evaluation.status == "pending"
        )
        .with_for_update()
    ).first()
    if row is None:
        raise LeaseLost(f"evaluation {held.evaluation.id}: lease lost before nack")
    if row.delivery_count >= DELIVERY_LIMIT:
        fail_with_follow_up(session, held.evaluation.id, index, reason)
        return True
    session.execute(
        update(Evaluation)
        .where(Evaluation.id == held.evaluation.id)
        .values(
            lease_token=None,
            lease_owner=None,
            lease_expires_at=None,
            not_before=datetime.now(UTC) + nack_delay(row.delivery_count),
            status_description=f"nacked: {reason}"[:500],
            modify_index=index,
        )
    )
    return False


def nack_delay(deliveries: int) -> timedelta:
    """Nomad: 1 s after the first delivery, then (n-1) x 20 s."""
    return NACK_INITIAL_DELAY if deliveries <= 1 else NACK_SUBSEQUENT_DELAY * (deliveries - 1)


def fail_with_follow_up(session: Session, eval_id: uuid.UUID, index: int, reason: str = "") -> uuid.UUID | None:
    """Fail an evaluation that hit the delivery limit and, unless its job is gone, create the
    failed-follow-up evaluation in the same transaction. ``reason`` (the last delivery's
    error) goes into StatusDescription so the operator sees why without reading logs."""
    failed = session.get(Evaluation, eval_id, with_for_update=True)
    if failed is None:
        return None
    failed.status = "failed"
    description = f"evaluation reached delivery limit ({DELIVERY_LIMIT})"
    failed.status_description = (f"{description}: {reason}" if reason else description)[:500]
    failed.lease_token = failed.lease_owner = failed.lease_expires_at = None
    failed.modify_index, failed.modify_time = index, datetime.now(UTC)
    if failed.namespace is None:  # a core evaluation: the next tick queues a fresh one
        return None
    job = session.get(Job, (failed.namespace, failed.job_id))
    if job is None or job.purged_at is not None:
        return None
    delay = FOLLOW_UP_BASELINE + FOLLOW_UP_RANGE * random.Random().random()
    follow_up = Evaluation(
        id=new_id(),
        namespace=failed.namespace,
        job_id=failed.job_id,
        priority=failed.priority,
        type=failed.type,
        triggered_by="failed-follow-up",
        job_modify_index=job.job_modify_index,
        status="pending",
        previous_eval=failed.id,
        wait_ns=int(delay.total_seconds() * 1e9),
        not_before=datetime.now(UTC) + delay,
        create_index=index,
        modify_index=index,
    )
    session.add(follow_up)
    session.flush()
    failed.next_eval = follow_up.id
    return follow_up.id
