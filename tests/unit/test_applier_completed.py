"""Which plans of a batch record that they completed their evaluation (plan_results.completed_eval):
only a due plan (it carries the completion, applied in full, not fenced) whose evaluation the
completion statement did complete."""

from __future__ import annotations

import uuid

import pytest

from app.pipeline.plan_apply.applier import Decided, Pending, _completed
from app.pipeline.plan_apply.plan_check import Verdict
from app.structs import Plan

pytestmark = pytest.mark.unit


def decided(
    plan_id: int, eval_id: uuid.UUID, *, verdict: Verdict, completes: bool = True, fenced: bool = False
) -> Decided:
    pending = Pending(plan_id, Plan(eval_id, 50, 0), uuid.uuid4(), "default", "job", completes)
    return Decided(pending, verdict=verdict, fenced=fenced)


def test_only_a_due_plan_of_a_completed_evaluation_is_marked() -> None:
    done, other = uuid.uuid4(), uuid.uuid4()
    batch = [
        decided(1, done, verdict=Verdict()),
        decided(2, done, verdict=Verdict(), fenced=True),  # a stale plan of the same evaluation
        decided(3, done, verdict=Verdict(rejected=[uuid.uuid4()])),  # partial: the worker completes it
        decided(4, done, completes=False, verdict=Verdict()),  # a chunk: carries no completion
        decided(5, other, verdict=Verdict()),  # the statement did not complete it (a moved lease)
    ]
    marked = {d.pending.id for d in _completed(batch, {done}) if d.completed}
    assert marked == {1}
