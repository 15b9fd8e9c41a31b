"""Scheduling activity over a recent window: placements and evaluations per minute, counted
from the rows' create_time (so only what garbage collection has not yet deleted)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.store.sql import query


@dataclass(frozen=True)
class MinuteActivity:
    minute: int  # the minute's start, Unix seconds
    placements: int  # allocations created in that minute
    evaluations: int  # evaluations created in that minute (core GC evaluations left out)


def per_minute(session: Session, minutes: int) -> list[MinuteActivity]:
    """One entry per minute of the last `minutes` (the current, partial minute last), oldest first."""
    rows = session.execute(query("activity_per_minute"), {"minutes": minutes})
    return [MinuteActivity(int(r.minute), int(r.placements), int(r.evaluations)) for r in rows]
