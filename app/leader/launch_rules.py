"""Which periodic jobs launch on this tick, pure: each parent's most recent scheduled time past
its last launch (app/values/cron.py reads the specs), or a note that its schedule cannot be used. The
I/O step is app/leader/periodic_launch.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfoNotFoundError

from app.values.cron import due_launch
from app.wire.job import PeriodicConfigSpec


@dataclass(frozen=True)
class Parent:
    namespace: str
    job_id: str
    periodic: PeriodicConfigSpec  # the job spec's Periodic block, as app/values/cron.py reads it
    last_launch: datetime


@dataclass(frozen=True)
class Due:
    namespace: str
    job_id: str
    at: datetime


@dataclass(frozen=True)
class Unusable:
    namespace: str
    job_id: str
    problem: str


@dataclass(frozen=True)
class Launches:
    due: tuple[Due, ...] = ()
    unusable: tuple[Unusable, ...] = ()


def due_launches(parents: Iterable[Parent], now: datetime) -> Launches:
    """After a leader change (or any gap) only the most recent scheduled time is due, once."""
    due, unusable = [], []
    for parent in parents:
        try:
            at = due_launch(parent.periodic, parent.last_launch, now)
        except (ZoneInfoNotFoundError, ValueError, KeyError) as err:  # CronError is a ValueError
            unusable.append(Unusable(parent.namespace, parent.job_id, str(err)))
            continue
        if at is not None:
            due.append(Due(parent.namespace, parent.job_id, at))
    return Launches(tuple(due), tuple(unusable))
