"""The leader's deployment watcher, one tick per second over every running deployment
(Nomad's deploymentwatcher): a `deployment-watcher` evaluation once allocations turned healthy
since the job's last evaluation (so the next max_parallel batch goes; one per job per tick),
failure at the progress deadline or on an unhealthy allocation, replacement of unhealthy
allocations where a progress deadline allows it, auto-promotion once every canary is healthy,
and auto-revert (in `deployments.fail_locked`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime

import structlog
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader.deployment_rules import Decision, GroupHealth, decide
from app.models import Deployment as DeploymentRow
from app.scheduler.deployments import RUNNING
from app.store.deployment import deployments
from app.store.deployment.deployment_codec import group_from_json, group_to_json
from app.store.job.jobs import RegisterOptions
from app.store.sql import query

NANOS = 1_000_000_000
log = structlog.get_logger(__name__)


def watcher(max_versions: int) -> Callable[[Session], int]:
    """The leader duty; an auto-revert keeps `max_versions` versions, as any registration does."""
    return lambda session: watch(session, RegisterOptions(max_versions=max_versions))


def watch(session: Session, options: RegisterOptions, now_ns: int | None = None) -> int:
    """One tick; returns how many deployments it acted on. It decides from a plain read first
    and takes the state index only when something is to be done,
    then locks those deployments and decides again from what it sees under the lock."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    ids = [row[0] for row in session.execute(query("watch_running_ids"))]
    wanted = [d for d, decision in _decisions(session, ids, now_ns).items() if not decision.empty]
    if not wanted:
        return 0
    index = next_index(session, deployments.TABLES)
    locked = [row[0] for row in session.execute(query("watch_lock_running"), {"ids": wanted})]
    acted = 0
    for deployment_id, decision in _decisions(session, locked, now_ns).items():
        if decision.empty:
            continue
        # One deployment's trouble must not hold up the others: its writes roll back alone.
        try:
            with session.begin_nested():
                _act(session, deployments.get_row(session, deployment_id), decision, index, options)
            acted += 1
        except Exception:
            log.exception("deployment watcher could not act", deployment_id=str(deployment_id))
    return acted


def _decisions(session: Session, ids: list[uuid.UUID], now_ns: int) -> dict[uuid.UUID, Decision]:
    if not ids:
        return {}
    health = _health(session, ids)
    found = {}
    for deployment_id in ids:
        row = deployments.get_row(session, deployment_id)
        if row.status != "running":
            continue
        groups = {name: group_from_json(g) for name, g in (row.task_groups or {}).items()}
        params = {"namespace": row.namespace, "job_id": row.job_id}
        latest_eval = int(session.execute(query("latest_job_eval_index"), params).scalar_one())
        seen = {g: health.get((deployment_id, g), GroupHealth()) for g in groups}
        found[deployment_id] = decide(groups, seen, latest_eval, now_ns)
    return found


def _act(session: Session, row: DeploymentRow, decision: Decision, index: int, options: RegisterOptions) -> None:
    if decision.groups:
        stored = dict(row.task_groups or {})
        for name, group in decision.groups.items():
            stored[name] = {**stored.get(name, {}), "RequireProgressBy": group_to_json(group)["RequireProgressBy"]}
        row.task_groups = stored
        row.modify_index = index
    if decision.fail:
        deployments.fail_locked(session, row, decision.fail, index, options)
        return
    if decision.promote:
        row.task_groups = {
            name: {**g, "Promoted": True} if g.get("DesiredCanaries", 0) > 0 else g
            for name, g in (row.task_groups or {}).items()
        }
        deployments.set_status(session, row, "running", RUNNING, index)
    if decision.reschedule:
        session.execute(query("mark_for_reschedule"), {"ids": list(decision.reschedule), "index": index})
    if decision.promote or decision.reschedule or decision.evaluate:
        deployments.watcher_eval(session, row, index)


def _health(session: Session, ids: list[uuid.UUID]) -> dict[tuple[uuid.UUID, str], GroupHealth]:
    rows = session.execute(query("watch_group_health"), {"ids": ids}).mappings()
    return {
        (r["deployment_id"], r["task_group"]): GroupHealth(
            healthy=int(r["healthy"]),
            healthy_canaries=int(r["healthy_canaries"]),
            unhealthy=tuple(r["unhealthy"]),
            unhealthy_total=int(r["unhealthy_total"]),
            latest_healthy_ns=_ns(r["latest_healthy"]),
            latest_health_index=int(r["latest_health_index"]),
        )
        for r in rows
    }


def _ns(moment: datetime | None) -> int:
    return 0 if moment is None else int(moment.timestamp() * NANOS)
