"""The leader's evaluation sweeps: leases that lapsed on their last allowed delivery become
failed evaluations with a follow-up, and max-plan-attempts blocked evaluations are released
for another try. Each decision is one SQL statement (sql/queries/broker.sql)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.pipeline.broker import DELIVERY_LIMIT, fail_with_follow_up
from app.store.sql import query


def reap_over_limit(session: Session, batch: int = 500) -> int:
    """Leader duty: leases that lapsed on the last allowed delivery become failed + follow-up."""
    if not session.execute(query("any_expired_over_limit"), {"delivery_limit": DELIVERY_LIMIT}).scalar():
        return 0  # idle ticks write nothing, so they wake no blocking query
    index = next_index(session, ["evaluations"])
    rows = session.execute(
        query("release_expired_over_limit"), {"delivery_limit": DELIVERY_LIMIT, "batch": batch}
    ).all()
    for row in rows:
        fail_with_follow_up(session, row.id, index)
    return len(rows)


def sweep_max_plan_blocked(session: Session) -> int:
    if not session.execute(query("any_max_plan_blocked")).scalar():
        return 0
    index = next_index(session, ["evaluations"])
    return int(session.execute(query("sweep_max_plan_blocked"), {"index": index}).rowcount)  # type: ignore[attr-defined]
