"""Worker side of plans: submit (fenced by the eval token, idempotent per attempt) and await the result."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import Engine, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.db.state_index import wake_listeners
from app.models import Evaluation
from app.models import Plan as PlanRow
from app.models import PlanResult as PlanResultRow
from app.pipeline.broker import Claim, LeaseLost
from app.pipeline.plan_codec import decode_result, encode_plan
from app.plan_wire import CompletionJson, PlanResultJson
from app.structs import Plan, PlanResult


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


def submit(
    session: Session,
    held: Claim,
    attempt: int,
    plan: Plan,
    job_id: str,
    namespace: str,
    completion: CompletionJson | None = None,
) -> int:
    """Write the plan. With `completion`, the applier also completes the evaluation with it, in
    the same commit, if it applies the plan in full (one write per evaluation)."""
    # No index: no blocking query watches plans. The NOTIFY only wakes the applier.
    wake_listeners(session)
    owns = session.scalar(
        select(Evaluation.id).where(
            Evaluation.id == held.evaluation.id, Evaluation.lease_token == held.token, Evaluation.status == "pending"
        )
    )
    if owns is None:
        raise LeaseLost(f"evaluation {held.evaluation.id}: lease lost before plan submit")
    plan_id = session.scalar(
        insert(PlanRow)
        .values(
            eval_token=held.token,
            attempt=attempt,
            completion=completion,
            **encode_plan(plan, namespace, job_id),
        )
        .on_conflict_do_nothing(index_elements=["eval_id", "eval_token", "attempt"])
        .returning(PlanRow.id)
    )
    if plan_id is None:  # a retry of a submit whose commit we did not see
        plan_id = session.scalar(
            select(PlanRow.id).where(
                PlanRow.eval_id == held.evaluation.id, PlanRow.eval_token == held.token, PlanRow.attempt == attempt
            )
        )
    assert plan_id is not None
    return int(plan_id)


def result(engine: Engine, plan_id: int) -> AppliedPlan | None:
    with Session(engine) as session:
        row = session.get(PlanResultRow, plan_id)
        if row is None:
            return None
        status = session.scalar(select(PlanRow.status).where(PlanRow.id == plan_id))
        verdict = applied(decode_result(stored_result(row)), refused=status == "rejected")
        return replace(verdict, completed_eval=row.completed_eval)


def stored_result(row: PlanResultRow) -> PlanResultJson:
    return {
        "node_update": row.node_update,
        "node_allocation": row.node_allocation,
        "node_preemptions": row.node_preemptions,
        "rejected_nodes": row.rejected_nodes,
        "refresh_index": row.refresh_index,
        "alloc_index": row.alloc_index,
    }


def applied(verdict: PlanResult, *, refused: bool) -> AppliedPlan:
    """A refused plan that rejected no node and asks for no refresh was fenced: the evaluation's
    lease had moved on before the applier took the plan."""
    return AppliedPlan(
        placed=sum(len(v) for v in verdict.node_allocation.values()),
        stopped=sum(len(v) for v in verdict.node_update.values()),
        rejected_nodes=len(verdict.rejected_nodes),
        refresh_index=verdict.refresh_index,
        fenced=refused and not verdict.rejected_nodes and verdict.refresh_index == 0,
    )
