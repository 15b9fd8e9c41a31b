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
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.node.nodes import create_node_evals, get_node
from app.values.rfc3339 import ZERO_TIME, of_datetime
from app.wire.node import DrainMetadataJson, DrainStrategyJson

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


def strategy(spec: DrainSpec, now: datetime, started: str | None) -> DrainStrategyJson:
    """Nomad's DrainStrategy JSON (its DrainSpec embedded, so flat): the deadline in
    nanoseconds, the force deadline and start as RFC 3339 times. A negative deadline forces the
    drain now; none (0) leaves the force deadline at the zero time."""
    if spec.deadline_ns > 0:
        force = of_datetime(now + timedelta(microseconds=spec.deadline_ns / 1000))
    else:
        force = of_datetime(now) if spec.deadline_ns < 0 else ZERO_TIME
    return {
        "Deadline": spec.deadline_ns,
        "IgnoreSystemJobs": spec.ignore_system_jobs,
        "ForceDeadline": force,
        "StartedAt": started or of_datetime(now),
    }


def last_drain(status: str, now: datetime, accessor: str, meta: dict[str, str]) -> DrainMetadataJson:
    """Nomad's DrainMetadata at the start of a drain."""
    at = of_datetime(now)
    return {"StartedAt": at, "UpdatedAt": at, "Status": status, "AccessorID": accessor, "Meta": meta}


def set_drain(
    session: Session,
    node_id: uuid.UUID,
    spec: DrainSpec | None,
    mark_eligible: bool,
    meta: dict[str, str],
    accessor: str = "",
) -> tuple[int, list[uuid.UUID]]:
    """Start, update or cancel a drain. Draining makes the node ineligible; cancelling with
    mark_eligible makes it eligible again (with the evaluations that implies)."""
    index = next_index(session, DRAIN_TABLES)
    node = get_node(session, node_id, for_update=True)
    now = datetime.now(UTC)
    evals: list[uuid.UUID] = []
    if spec is not None:
        node.drain_strategy = strategy(spec, now, (node.drain_strategy or {}).get("StartedAt"))
        node.scheduling_eligibility = "ineligible"
        node.last_drain = last_drain("draining", now, accessor, meta)
    else:
        if node.drain_strategy is not None:
            node.last_drain = {**(node.last_drain or {}), "Status": "canceled", "UpdatedAt": of_datetime(now)}
        node.drain_strategy = SQL_NULL
        if mark_eligible and node.scheduling_eligibility == "ineligible":
            node.scheduling_eligibility = "eligible"
            session.flush()
            if node.status == "ready":
                evals = create_node_evals(session, node, index)
                unblock_capacity(session, {node.id: node.computed_class}, index)
    node.modify_index, node.updated_at = index, now
    return index, evals
