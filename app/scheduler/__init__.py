"""The pure scheduler: reads dataclasses from app.structs, returns plans. No I/O here."""

from __future__ import annotations

from app.scheduler import generic, system
from app.structs import Evaluation, SchedulerResult, Snapshot

_GENERIC, _SYSTEM = ("service", "batch"), ("system", "sysbatch")


def process(evaluation: Evaluation, snapshot: Snapshot, *, now_ns: int) -> SchedulerResult:
    """One scheduling pass: a pure function of the evaluation, the snapshot and the time."""
    if evaluation.type in _GENERIC:
        return generic.schedule(evaluation, snapshot, now_ns)
    if evaluation.type in _SYSTEM:
        return system.schedule(evaluation, snapshot, now_ns)
    raise ValueError(f"no scheduler for evaluation type {evaluation.type!r}")
