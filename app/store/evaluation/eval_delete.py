"""Deleting evaluations by hand (Nomad's Eval.Delete, `DELETE /v1/evaluations`): only while the
eval broker is paused (the scheduler configuration's PauseEvalBroker), and only evaluations that
are safe to delete.

Nomad calls an evaluation safe when its job is gone, stopped or dead, or none of its allocations
is running, unknown, or failed and waiting for a reschedule. Here allocations keep a foreign key
to the evaluation that placed them, so an evaluation that placed anything stays until GC takes
its allocations; and one a worker holds (an unexpired lease) is in flight, so it stays too."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, exists, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Evaluation
from app.store.scheduler_config import get_config
from app.values.errors import Conflict, InvalidInput, NotFound


@dataclass(frozen=True)
class DeleteResult:
    count: int
    index: int


def _refuse_unless_paused(session: Session) -> None:
    if not get_config(session).pause_eval_broker:
        raise Conflict.of(
            "SchedulerConfig.PauseEvalBroker",
            "eval broker is enabled; eval broker must be paused to delete evals "
            "(corral operator scheduler set-config -pause-eval-broker=true)",
        )


def _unsafe(session: Session, evaluation: Evaluation) -> str | None:
    """Why the evaluation may not be deleted, or None."""
    if evaluation.lease_token is not None:
        return "a worker is scheduling it"
    if session.scalar(select(exists().where(Allocation.eval_id == evaluation.id))):
        return "it placed allocations (it goes with them, when garbage collection takes them)"
    return None


def delete_by_id(session: Session, ids: Sequence[uuid.UUID]) -> DeleteResult:
    index = next_index(session, ["evaluations"])
    _refuse_unless_paused(session)
    rows = {e.id: e for e in session.scalars(select(Evaluation).where(Evaluation.id.in_(ids)).with_for_update())}
    for eval_id in ids:
        found = rows.get(eval_id)
        if found is None:
            raise NotFound.of("EvalIDs", f"eval {eval_id} not found")
        reason = _unsafe(session, found)
        if reason is not None:
            raise InvalidInput.of("EvalIDs", f"eval {eval_id} is not safe to delete: {reason}")
    session.execute(delete(Evaluation).where(Evaluation.id.in_(list(rows))))
    return DeleteResult(len(rows), index)


def delete_by_filter(session: Session, matches: Callable[[Evaluation], bool]) -> DeleteResult:
    """Every evaluation the filter matches and that is safe to delete (the others are left, as
    Nomad's delete by filter leaves them)."""
    index = next_index(session, ["evaluations"])
    _refuse_unless_paused(session)
    doomed = [
        e.id
        for e in session.scalars(select(Evaluation).with_for_update(skip_locked=True))
        if matches(e) and _unsafe(session, e) is None
    ]
    if doomed:
        session.execute(delete(Evaluation).where(Evaluation.id.in_(doomed)))
    return DeleteResult(len(doomed), index)
