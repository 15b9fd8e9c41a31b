"""The leader's periodic-launch tick: launch every periodic job whose most recent scheduled
time is past its last launch (app/store/periodic.py writes each launch)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfoNotFoundError

import structlog
from sqlalchemy.orm import Session

from app.cron import due_launch
from app.db.state_index import next_index
from app.store.periodic import LAUNCH_TABLES, launch
from app.store.sql import query

log = structlog.get_logger(__name__)


def launch_due(session: Session, now: datetime | None = None) -> int:
    """The leader's duty: launch every periodic job whose most recent scheduled time is past its
    last launch. After a leader change (or any gap) only that most recent time is launched, once.
    Returns the number of children launched; writes nothing when nothing is due."""
    now = now or datetime.now(UTC)
    due: list[tuple[str, str, datetime]] = []
    for row in session.execute(query("periodic_parents")).mappings():
        try:
            at = due_launch(row["periodic"], row["last_launch"], now)
        except (ZoneInfoNotFoundError, ValueError, KeyError) as err:  # CronError is a ValueError
            log.warning(
                "periodic job has an unusable schedule", job=row["id"], namespace=row["namespace"], error=str(err)
            )
            continue
        if at is not None:
            due.append((row["namespace"], row["id"], at))
    if not due:
        return 0
    index = next_index(session, LAUNCH_TABLES)
    launched = 0
    for namespace, job_id, at in due:
        result = launch(session, namespace, job_id, at, index, forced=False)
        if result is not None and result.child_id is not None:
            launched += 1
            log.info("periodic launch", job=job_id, namespace=namespace, child=result.child_id, at=at.isoformat())
    return launched
