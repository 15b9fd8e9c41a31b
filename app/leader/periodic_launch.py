"""The leader's periodic-launch tick: launch every periodic job whose most recent scheduled
time is past its last launch (app/store/job/periodic.py writes each launch)."""

from __future__ import annotations

from datetime import UTC, datetime

import structlog
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader.launch_rules import Parent, due_launches
from app.store.job.periodic import LAUNCH_TABLES, launch
from app.store.sql import query

log = structlog.get_logger(__name__)


def launch_due(session: Session, now: datetime | None = None) -> int:
    """The leader's duty: launch what app/leader/launch_rules.py finds due. Returns the number
    of children launched; writes nothing when nothing is due."""
    now = now or datetime.now(UTC)
    rows = session.execute(query("periodic_parents")).mappings()
    found = due_launches((Parent(r["namespace"], r["id"], r["periodic"], r["last_launch"]) for r in rows), now)
    for bad in found.unusable:
        log.warning("periodic job has an unusable schedule", job=bad.job_id, namespace=bad.namespace, error=bad.problem)
    if not found.due:
        return 0
    index = next_index(session, LAUNCH_TABLES)
    launched = 0
    for due in found.due:
        result = launch(session, due.namespace, due.job_id, due.at, index, forced=False)
        if result is not None and result.child_id is not None:
            launched += 1
            log.info(
                "periodic launch", job=due.job_id, namespace=due.namespace, child=result.child_id, at=due.at.isoformat()
            )
    return launched
