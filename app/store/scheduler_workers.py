"""The scheduling loops of the worker processes (Nomad's scheduler workers), as they publish
them: each `corral worker` process writes a row per loop every few seconds and deletes its rows
when it stops; /v1/agent/schedulers lists the rows heard from within LIVE_TTL. A process killed
without stopping leaves rows that age out of the list and are forgotten after FORGET_AFTER."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.models import SchedulerWorker

LIVE_TTL = timedelta(seconds=45)  # three missed publishes (workers publish every PUBLISH_EVERY_S)
FORGET_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class LoopState:
    """One scheduling loop as its process sees it at publish time."""

    id: str
    enabled_schedulers: tuple[str, ...]
    started_at: datetime
    status: str
    workload_status: str


def publish(session: Session, process: str, loops: Iterable[LoopState], now: datetime) -> None:
    """Write the loops of `process` (each write replaces the last); forget long-silent rows."""
    rows = [
        {
            "id": loop.id,
            "process": process,
            "enabled_schedulers": list(loop.enabled_schedulers),
            "started_at": loop.started_at,
            "status": loop.status,
            "workload_status": loop.workload_status,
            "updated_at": now,
        }
        for loop in loops
    ]
    if rows:
        statement = pg_insert(SchedulerWorker).values(rows)
        changing = ("process", "enabled_schedulers", "status", "workload_status", "updated_at")
        session.execute(
            statement.on_conflict_do_update(index_elements=["id"], set_={c: statement.excluded[c] for c in changing})
        )
    session.execute(delete(SchedulerWorker).where(SchedulerWorker.updated_at < now - FORGET_AFTER))


def withdraw(session: Session, process: str) -> None:
    """A stopping process's loops leave the list at once."""
    session.execute(delete(SchedulerWorker).where(SchedulerWorker.process == process))


def live(session: Session, now: datetime) -> Sequence[SchedulerWorker]:
    """The loops heard from within LIVE_TTL, oldest first."""
    stmt = (
        select(SchedulerWorker)
        .where(SchedulerWorker.updated_at >= now - LIVE_TTL)
        .order_by(SchedulerWorker.started_at, SchedulerWorker.id)
    )
    return session.scalars(stmt).all()
