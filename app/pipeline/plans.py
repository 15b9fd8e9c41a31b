"""Worker side of plans: submit (fenced by the eval token, idempotent per attempt) and await the result."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import Engine

from app.db.engines import autocommitted
from app.pipeline.broker import Claim, LeaseLost
from app.pipeline.codecs.plan_codec import encode_plan
from app.pipeline.metrics_columns import text_columns
from app.store.sql import psycopg_query
from app.structs import Plan
from app.wire.plan import CompletionJson

# How long a worker that found the schema without revision 0037's columns keeps writing the
# metrics inline before it asks again (any applier reads both forms).
RECHECK_S = 10.0


@dataclass(frozen=True)
class AppliedPlan:
    """The applier's verdict as the worker needs it."""

    placed: int
    stopped: int
    rejected_nodes: int
    refresh_index: int
    fenced: bool
    # The applier completed the evaluation in the commit that applied the plan: the worker
    # writes nothing more for this evaluation.
    completed_eval: bool = False

    @property
    def progress(self) -> bool:
        return self.placed > 0 or self.stopped > 0

    @property
    def partial(self) -> bool:
        return self.refresh_index != 0


def combined(verdicts: Sequence[AppliedPlan]) -> AppliedPlan:
    """The verdicts on one pass's plans (a big plan's chunks) as one: partial if any chunk was,
    and progress if any placed or stopped something. Only a pass's last plan may carry the
    evaluation's completion."""
    if len(verdicts) == 1:
        return verdicts[0]
    return AppliedPlan(
        placed=sum(v.placed for v in verdicts),
        stopped=sum(v.stopped for v in verdicts),
        rejected_nodes=sum(v.rejected_nodes for v in verdicts),
        refresh_index=max(v.refresh_index for v in verdicts),
        fenced=any(v.fenced for v in verdicts),
        completed_eval=verdicts[-1].completed_eval,
    )


def submit(
    engine: Engine,
    held: Claim,
    attempt: int,
    plan: Plan,
    job_id: str,
    namespace: str,
    completion: CompletionJson | None = None,
) -> int:
    """Write the plan, fenced by the evaluation's token, in one autocommitted statement (one
    round trip; the NOTIFY that wakes the applier rides along). Idempotent per attempt: a retry
    returns the plan the first call wrote. With `completion`, the applier also completes the
    evaluation with it, in the same commit, if it applies the plan in full (one write per
    evaluation). No index: no blocking query watches plans."""
    key = {"eval_id": held.evaluation.id, "token": held.token, "attempt": attempt}
    with autocommitted(engine) as pg:
        text = text_columns(pg, RECHECK_S)
        row = pg.execute(
            _submit_query(text), key | _plan_params(plan, namespace, job_id, completion, text), prepare=True
        ).fetchone()
        assert row is not None  # the statement always returns one row
        owned, plan_id = bool(row[0]), row[1]
        if owned and plan_id is None:  # met a concurrent insert of this very attempt: read it anew
            again = pg.execute(psycopg_query("plan_id_of_attempt"), key).fetchone()
            plan_id = again[0] if again else None
    if not owned:
        raise LeaseLost(f"evaluation {held.evaluation.id}: lease lost before plan submit")
    assert plan_id is not None
    return int(plan_id)


@dataclass(frozen=True)
class Submission:
    """One plan of a batch submit: its evaluation's claim, the plan, and its completion."""

    held: Claim
    plan: Plan
    completion: CompletionJson | None


def submit_batch(engine: Engine, submissions: Sequence[Submission]) -> list[int | None]:
    """submit() for several evaluations' first plans (attempt 1) in one transaction: one round
    trip and one commit. Each is fenced by its own token: the plan ID, or None for a plan not
    written because its evaluation is no longer ours (or, after an ambiguous earlier try, one
    whose ID needs reading again: submit() of the same attempt sorts that out)."""
    with autocommitted(engine) as pg:
        text = text_columns(pg, RECHECK_S)
        with pg.pipeline():
            pg.execute("BEGIN")
            sent = [
                pg.execute(
                    _submit_query(text),
                    {"eval_id": s.held.evaluation.id, "token": s.held.token, "attempt": 1}
                    | _plan_params(s.plan, s.held.evaluation.namespace, s.held.evaluation.job_id, s.completion, text),
                    prepare=True,
                )
                for s in submissions
            ]
            pg.execute("COMMIT")
        rows = [cursor.fetchone() for cursor in sent]
    return [int(row[1]) if row is not None and row[0] and row[1] is not None else None for row in rows]


def _submit_query(text_metrics: bool) -> str:
    return psycopg_query("submit_plan" if text_metrics else "submit_plan_before_0037")


def _plan_params(
    plan: Plan, namespace: str, job_id: str, completion: CompletionJson | None, text_metrics: bool
) -> dict[str, object]:
    row = encode_plan(plan, namespace, job_id, text_metrics=text_metrics)
    params: dict[str, object] = {
        "namespace": row["namespace"],
        "job_id": row["job_id"],
        "priority": row["priority"],
        "all_at_once": row["all_at_once"],
        "snapshot_index": row["snapshot_index"],
        "node_update": Jsonb(row["node_update"]),
        "node_allocation": Jsonb(row["node_allocation"]),
        "node_preemptions": Jsonb(row["node_preemptions"]),
        "deployment": Jsonb(row["deployment"]) if row["deployment"] is not None else None,
        "deployment_updates": Jsonb(row["deployment_updates"]),
        "completion": Jsonb(completion) if completion is not None else None,
    }
    if text_metrics:
        params["placement_metrics"] = row.get("placement_metrics")
    return params


def result(engine: Engine, plan_id: int) -> AppliedPlan | None:
    """The applier's verdict on the plan, or None while it waits: one statement."""
    with autocommitted(engine) as pg:
        row = pg.execute(psycopg_query("plan_verdict"), {"plan_id": plan_id}, prepare=True).fetchone()
    return None if row is None else _verdict_of(row)


def results(engine: Engine, plan_ids: Collection[int]) -> dict[int, AppliedPlan]:
    """The verdicts on those of the plans the applier has decided, by plan ID: one statement
    for all of them (a batch's wait that ended without their notification reads them so)."""
    if not plan_ids:
        return {}
    with autocommitted(engine) as pg:
        rows = pg.execute(psycopg_query("plan_verdicts"), {"plan_ids": list(plan_ids)}, prepare=True).fetchall()
    return {int(row[0]): _verdict_of(row[1:]) for row in rows}


def _verdict_of(row: Sequence[Any]) -> AppliedPlan:
    """plan_verdict's columns (status, placed, stopped, rejected nodes, refresh index, completed)."""
    status, placed, stopped, rejected, refresh_index, completed = row
    return verdict(
        placed=int(placed),
        stopped=int(stopped),
        rejected_nodes=int(rejected or 0),
        refresh_index=int(refresh_index),
        refused=status == "rejected",
        completed_eval=bool(completed),
    )


def told_entry(plan_id: int, applied: AppliedPlan, refused: bool) -> str:
    """A plan's entry in the applier's verdicts notification (plan_record_status), as
    told_verdicts reads it back: `id:placed:stopped:rejected_nodes:refresh_index:flags`, the
    flags `r` (refused) and `c` (the evaluation completed with it)."""
    flags = ("r" if refused else "") + ("c" if applied.completed_eval else "")
    counts = (applied.placed, applied.stopped, applied.rejected_nodes, applied.refresh_index)
    return ":".join((str(plan_id), *(str(n) for n in counts), flags))


def told_verdicts(payloads: Iterable[str]) -> dict[int, AppliedPlan]:
    """The verdicts the applier's notifications carried (plan_record_status), by plan ID. An
    entry that is a bare ID (an applier of an earlier release) or does not parse tells nothing:
    that plan's result is read from the database."""
    told: dict[int, AppliedPlan] = {}
    for payload in payloads:
        for entry in payload.split(",") if payload else ():
            parsed = _told(entry)
            if parsed is not None:
                told[parsed[0]] = parsed[1]
    return told


def _told(entry: str) -> tuple[int, AppliedPlan] | None:
    fields = entry.split(":")
    if len(fields) != 6:
        return None
    try:
        plan_id, placed, stopped, rejected, refresh_index = (int(f) for f in fields[:5])
    except ValueError:
        return None
    flags = fields[5]
    applied = verdict(
        placed=placed,
        stopped=stopped,
        rejected_nodes=rejected,
        refresh_index=refresh_index,
        refused="r" in flags,
        completed_eval="c" in flags,
    )
    return plan_id, applied


def verdict(
    *, placed: int, stopped: int, rejected_nodes: int, refresh_index: int, refused: bool, completed_eval: bool
) -> AppliedPlan:
    """A refused plan that rejected no node and asks for no refresh was fenced: the evaluation's
    lease had moved on before the applier took the plan."""
    return AppliedPlan(
        placed=placed,
        stopped=stopped,
        rejected_nodes=rejected_nodes,
        refresh_index=refresh_index,
        fenced=refused and not rejected_nodes and refresh_index == 0,
        completed_eval=completed_eval,
    )
