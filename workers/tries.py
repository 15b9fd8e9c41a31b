"""One try at an evaluation, as the worker's loops and its batches share it: the outcome of a
pass and the applier's verdict on its plan."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.pipeline.broker import Outcome
from app.pipeline.plans import AppliedPlan
from app.structs import SchedulerResult
from app.wire.plan import CompletionJson


class ShuttingDown(Exception):
    """SIGTERM arrived while an evaluation was waiting on something that may never come."""


@dataclass(frozen=True)
class Try:
    """A pass on one snapshot: its outcome, the verdict on its plan (None: nothing to submit),
    and the attempts its plans used up (each plan submitted is an attempt)."""

    outcome: Outcome
    applied: AppliedPlan | None
    attempt: int


def outcome_of(result: SchedulerResult, snapshot_index: int, scheduled_at: datetime) -> Outcome:
    return Outcome(
        snapshot_index=snapshot_index,
        scheduled_at=scheduled_at,
        failed_tg_allocs=dict(result.failed_tg_allocs),
        queued_allocations=dict(result.queued_allocations),
        class_eligibility=dict(result.class_eligibility),
        escaped_computed_class=result.escaped_computed_class,
        rolling_wait_s=result.rolling_wait_ns / 1e9,
        blocked_nodes=result.blocked_nodes,
    )


def completion_of(outcome: Outcome) -> CompletionJson | None:
    """What the applier writes to complete the evaluation if this plan applies in full: the
    common case only (broker.complete_success's). Failed task groups (a blocked evaluation) and
    rolling follow-ups stay with the worker's own completion."""
    if outcome.failed_tg_allocs or outcome.rolling_wait_s or outcome.status != "complete":
        return None
    return {
        "SnapshotIndex": outcome.snapshot_index,
        "QueuedAllocations": dict(outcome.queued_allocations),
        "ClassEligibility": dict(outcome.class_eligibility),
        "EscapedComputedClass": outcome.escaped_computed_class,
        "ScheduledAt": outcome.scheduled_at.isoformat(),
        "Description": outcome.description,
    }
