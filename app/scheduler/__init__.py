"""The pure scheduler: reads dataclasses from app.structs, returns plans. No I/O here."""

from __future__ import annotations

from collections.abc import Generator

from app.scheduler import generic, system
from app.scheduler.metrics import DEFAULT_METRICS, MetricsOptions
from app.structs import Evaluation, Plan, SchedulerResult, Snapshot

_GENERIC, _SYSTEM = ("service", "batch"), ("system", "sysbatch")


def process(
    evaluation: Evaluation, snapshot: Snapshot, *, now_ns: int, metrics: MetricsOptions = DEFAULT_METRICS
) -> SchedulerResult:
    """One scheduling pass: a pure function of the evaluation, the snapshot and the time (and of
    `metrics.clock`'s readings, which only the placements' AllocationTime shows)."""
    if evaluation.type in _GENERIC:
        return generic.schedule(evaluation, snapshot, now_ns, metrics)
    if evaluation.type in _SYSTEM:
        return system.schedule(evaluation, snapshot, now_ns, metrics)
    raise ValueError(f"no scheduler for evaluation type {evaluation.type!r}")


def stream(
    evaluation: Evaluation,
    snapshot: Snapshot,
    *,
    now_ns: int,
    chunk_placements: int,
    metrics: MetricsOptions = DEFAULT_METRICS,
) -> Generator[Plan, None, SchedulerResult]:
    """The same pass as `process`, yielding the fresh placements of a big service or batch plan
    in chunks of `chunk_placements` as it goes (generic.stream says which plans qualify) and
    returning the result with the rest. The caller does the I/O between chunks; the pass
    itself stays pure. System jobs place at most one allocation per node: never chunked."""
    if evaluation.type in _GENERIC:
        return (yield from generic.stream(evaluation, snapshot, now_ns, chunk_placements, metrics))
    return process(evaluation, snapshot, now_ns=now_ns, metrics=metrics)
