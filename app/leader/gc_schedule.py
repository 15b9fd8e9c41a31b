"""The leader's garbage-collection ticks: one per collector, each on its own interval, queueing
that collector's core evaluation when it is due (app/gc decides what is eligible and when)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from app.gc.core_evals import enqueue_core
from app.gc.thresholds import Thresholds
from app.settings.config import Settings


def intervals(settings: Settings) -> dict[str, float]:
    """Seconds between ticks, per core evaluation kind."""
    return {
        "eval-gc": settings.eval_gc_interval_s,
        "job-gc": settings.job_gc_interval_s,
        "node-gc": settings.node_gc_interval_s,
        "deployment-gc": settings.deployment_gc_interval_s,
    }


def ticker(kind: str, thresholds: Thresholds) -> Callable[[Session], int]:
    """The duty for one kind: 1 when it queued a core evaluation, else 0."""
    return lambda session: int(enqueue_core(session, kind, thresholds) is not None)


def duties(settings: Settings) -> dict[str, tuple[float, Callable[[Session], int]]]:
    thresholds = Thresholds.from_settings(settings)
    return {kind: (seconds, ticker(kind, thresholds)) for kind, seconds in intervals(settings).items()}
