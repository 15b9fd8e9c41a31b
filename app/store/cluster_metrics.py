"""The cluster's state as Nomad's server and client gauges, read in one snapshot at scrape time.

Everything here is derived from rows that already exist, so any API server answers the same
figures and nothing is counted twice when several of them are scraped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from app.store.sql import query

# v_eval_queue's states, as Nomad's broker names its totals.
BROKER_TOTALS = {
    "ready": "total_ready",
    "in-flight": "total_unacked",
    "behind-in-flight": "total_pending",
    "delayed": "total_waiting",
}
JOB_SUMMARY_FIELDS = ("queued", "starting", "running", "complete", "failed", "lost", "unknown")
JOB_STATUSES = ("pending", "running", "dead")


@dataclass(frozen=True)
class GroupSummary:
    namespace: str
    job_id: str
    task_group: str
    counts: dict[str, int]


@dataclass(frozen=True)
class NodeUsage:
    node_id: str
    name: str
    datacenter: str
    node_class: str
    node_pool: str
    allocated: dict[str, int]  # cpu (MHz), memory (MB), disk (MB)
    unallocated: dict[str, int]


@dataclass(frozen=True)
class ClusterFigures:
    broker: dict[str, int] = field(default_factory=dict)
    blocked_total: int = 0
    blocked_escaped: int = 0
    plan_queue_depth: int = 0
    heartbeats_active: int = 0
    job_status: dict[str, int] = field(default_factory=dict)
    job_summaries: list[GroupSummary] = field(default_factory=list)
    nodes: list[NodeUsage] = field(default_factory=list)


def read_cluster_figures(session: Session) -> ClusterFigures:
    """Call inside a REPEATABLE READ transaction so every figure comes from one snapshot."""
    states = {row.state: int(row.n) for row in session.execute(query("metrics_broker"))}
    blocked = session.execute(query("metrics_blocked")).one()
    statuses = {row.status: int(row.n) for row in session.execute(query("metrics_job_status"))}
    return ClusterFigures(
        broker={total: states.get(state, 0) for state, total in BROKER_TOTALS.items()},
        blocked_total=int(blocked.total),
        blocked_escaped=int(blocked.escaped),
        plan_queue_depth=int(session.execute(query("metrics_plan_queue")).scalar_one()),
        heartbeats_active=int(session.execute(query("metrics_heartbeats")).scalar_one()),
        job_status={status: statuses.get(status, 0) for status in JOB_STATUSES},
        job_summaries=[
            GroupSummary(r.namespace, r.job_id, r.task_group, {f: int(getattr(r, f)) for f in JOB_SUMMARY_FIELDS})
            for r in session.execute(query("metrics_job_summary"))
        ],
        nodes=[_node_usage(r) for r in session.execute(query("metrics_node_usage"))],
    )


def _node_usage(row: Row[Any]) -> NodeUsage:
    used = {"cpu": int(row.cpu_used), "memory": int(row.memory_mb_used), "disk": int(row.disk_mb_used)}
    capacity = {"cpu": int(row.cpu_capacity), "memory": int(row.memory_mb_capacity), "disk": int(row.disk_mb_capacity)}
    return NodeUsage(
        node_id=str(row.id),
        name=row.name,
        datacenter=row.datacenter,
        node_class=row.node_class or "none",
        node_pool=row.node_pool,
        allocated=used,
        unallocated={key: capacity[key] - used[key] for key in used},
    )
