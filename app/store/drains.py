"""The operator's drain write: start, update or cancel a node's drain strategy (Nomad's
Node.UpdateDrain). The leader's drainer (app/leader/drain.py) carries it out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import null
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.store.blocked_evals import unblock_capacity
from app.store.nodes import create_node_evals, get_node

DRAIN_TABLES = ("nodes", "evaluations", "allocations")
NANOS = 1_000_000_000
# SQL NULL, not JSON null: the `drain` column is computed from `drain_strategy IS NOT NULL`.
SQL_NULL: Any = null()


@dataclass(frozen=True)
class DrainSpec:
    deadline_ns: int  # < 0: force now; 0: no deadline
    ignore_system_jobs: bool = False


def now_ns(moment: datetime) -> int:
    return int(moment.timestamp() * NANOS)


def set_drain(
    session: Session, node_id: uuid.UUID, spec: DrainSpec | None, mark_eligible: bool, meta: dict[str, str]
) -> tuple[int, list[uuid.UUID]]:
    """Start, update or cancel a drain. Draining makes the node ineligible; cancelling with
    mark_eligible makes it eligible again (with the evaluations that implies)."""
    index = next_index(session, DRAIN_TABLES)
    node = get_node(session, node_id, for_update=True)
    now = datetime.now(UTC)
    evals: list[uuid.UUID] = []
    if spec is not None:
        force = now + timedelta(microseconds=spec.deadline_ns / 1000) if spec.deadline_ns > 0 else None
        node.drain_strategy = {
            "DrainSpec": {"Deadline": spec.deadline_ns, "IgnoreSystemJobs": spec.ignore_system_jobs},
            "ForceDeadline": now_ns(force) if force else (now_ns(now) if spec.deadline_ns < 0 else 0),
            "StartedAt": (node.drain_strategy or {}).get("StartedAt") or now_ns(now),
        }
        node.scheduling_eligibility = "ineligible"
        node.last_drain = {"Status": "draining", "StartedAt": now_ns(now), "UpdatedAt": now_ns(now), "Meta": meta}
    else:
        if node.drain_strategy is not None:
            node.last_drain = {**(node.last_drain or {}), "Status": "canceled", "UpdatedAt": now_ns(now)}
        node.drain_strategy = SQL_NULL
        if mark_eligible and node.scheduling_eligibility == "ineligible":
            node.scheduling_eligibility = "eligible"
            session.flush()
            if node.status == "ready":
                evals = create_node_evals(session, node, index)
                unblock_capacity(session, {node.id: node.computed_class}, index)
    node.modify_index, node.updated_at = index, now
    return index, evals
