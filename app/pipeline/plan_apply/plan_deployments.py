"""The deployments a batch of plans creates or advances, without the ORM: the stored rows are read
(locked) with the batch's other reads, every plan's deployment and status updates are folded into
them in plan order in memory, and the outcome is written with at most three statements for the
whole batch (the new rows, the changed rows, the job versions a success marks stable).

Semantics are the ones a plan always had: a new deployment is created as planned; a stored one
that is still active takes the plan's new groups and the larger DesiredCanaries of the groups it
has (everything else in a stored group, Promoted and the progress deadline among them, is kept:
operators and the watcher own it), and while running, the plan's description; a deployment that
already ended is left alone, by group merges and status updates alike. A status update to
`successful` marks the deployed job version stable (the version auto-revert returns to)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from app.pipeline.plan_apply.plan_state import binary_ids
from app.store.deployment.deployment_codec import group_to_json
from app.store.sql import psycopg_query
from app.structs import Deployment, DeploymentStatusUpdate, Plan
from app.values.constants import DEPLOYMENT_ACTIVE_STATUSES
from app.wire.deployment import DeploymentStatus
from app.wire.plan import DeploymentGroupJson


@dataclass(frozen=True)
class Stored:
    """A deployment as the batch so far leaves it. `new`: this batch creates it; `changed`: a
    stored row this batch updates."""

    namespace: str
    job_id: str
    job_version: int
    status: DeploymentStatus
    status_description: str
    task_groups: Mapping[str, DeploymentGroupJson]
    new: bool = False
    changed: bool = False
    planned: Deployment | None = None  # the creating plan's deployment (for a new row's fixed fields)


@dataclass(frozen=True)
class Outcome:
    """What the folded plans write, and the stored state once they are written."""

    after: dict[uuid.UUID, Stored]
    stable: list[tuple[str, str, int]] = field(default_factory=list)  # (namespace, job, version)

    @property
    def writes(self) -> bool:
        return any(s.new or s.changed for s in self.after.values())


def deployment_ids(plans: Sequence[Plan]) -> list[uuid.UUID]:
    """Every deployment the plans create, advance or change the status of."""
    ids = {p.deployment.id for p in plans if p.deployment}
    ids.update(u.deployment_id for p in plans for u in p.deployment_updates)
    return sorted(ids)


def stored_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[uuid.UUID, Stored]:
    return {
        r["id"]: Stored(
            r["namespace"], r["job_id"], r["job_version"], r["status"], r["status_description"], r["task_groups"] or {}
        )
        for r in rows
    }


def fold(plans: Iterable[Plan], stored: Mapping[uuid.UUID, Stored]) -> Outcome:
    """Apply every plan's deployment, then its status updates, in plan order, to `stored`
    (read-only: a batch that fails to write keeps the state it started from)."""
    outcome = Outcome(dict(stored))
    for plan in plans:
        if plan.deployment:
            _merge(outcome, plan.deployment)
        _set_statuses(outcome, plan.deployment_updates)
    return outcome


def settled(outcome: Outcome) -> dict[uuid.UUID, Stored]:
    """The stored state once `outcome` is written: the next write starts from it."""
    return {i: replace(s, new=False, changed=False, planned=None) for i, s in outcome.after.items()}


def _merge(outcome: Outcome, planned: Deployment) -> None:
    row = outcome.after.get(planned.id)
    if row is None:
        groups = {name: group_to_json(g) for name, g in planned.groups.items()}
        outcome.after[planned.id] = Stored(
            planned.namespace,
            planned.job_id,
            planned.job_version,
            planned.status,
            planned.status_description,
            groups,
            new=True,
            planned=planned,
        )
        return
    if row.status not in DEPLOYMENT_ACTIVE_STATUSES:
        return
    groups = dict(row.task_groups)
    for name, group in planned.groups.items():
        kept = groups.get(name)
        if kept is None:
            groups[name] = group_to_json(group)
        else:
            groups[name] = {**kept, "DesiredCanaries": max(kept["DesiredCanaries"], group.desired_canaries)}
    if groups == row.task_groups and planned.status_description == row.status_description:
        return
    description = planned.status_description if row.status == "running" else row.status_description
    outcome.after[planned.id] = replace(row, task_groups=groups, status_description=description, changed=True)


def _set_statuses(outcome: Outcome, updates: Iterable[DeploymentStatusUpdate]) -> None:
    for change in updates:
        row = outcome.after.get(change.deployment_id)
        if row is None or row.status not in DEPLOYMENT_ACTIVE_STATUSES:
            continue
        outcome.after[change.deployment_id] = replace(
            row, status=change.status, status_description=change.description, changed=True
        )
        if change.status == "successful":
            outcome.stable.append((row.namespace, row.job_id, row.job_version))


# --- the statements ------------------------------------------------------------------------


def send_read(pg: psycopg.Connection[Any], ids: Sequence[uuid.UUID]) -> psycopg.Cursor[Any] | None:
    """Lock and read the stored deployments (in the caller's pipeline); None when there are none."""
    if not ids:
        return None
    return pg.cursor(row_factory=dict_row).execute(binary_ids("plan_deployments"), {"ids": list(ids)}, prepare=True)


def write(pg: psycopg.Connection[Any], outcome: Outcome, index: int) -> None:
    """The new deployments, the changed ones and the stable versions: before the allocations
    that reference them."""
    created = [(i, s) for i, s in outcome.after.items() if s.new]
    if created:
        pg.execute(psycopg_query("plan_insert_deployments"), _insert_params(created, index), prepare=True)
    changed = [(i, s) for i, s in outcome.after.items() if s.changed and not s.new]
    if changed:
        pg.execute(
            psycopg_query("plan_update_deployments"),
            {
                "index": index,
                "ids": [i for i, _ in changed],
                "groups": [Jsonb(dict(s.task_groups)) for _, s in changed],
                "statuses": [s.status for _, s in changed],
                "descriptions": [s.status_description for _, s in changed],
            },
            prepare=True,
        )
    if outcome.stable:
        pg.execute(
            psycopg_query("plan_mark_stable"),
            {
                "index": index,
                "namespaces": [s[0] for s in outcome.stable],
                "job_ids": [s[1] for s in outcome.stable],
                "versions": [s[2] for s in outcome.stable],
            },
        )


def _insert_params(created: list[tuple[uuid.UUID, Stored]], index: int) -> dict[str, object]:
    planned = [s.planned for _, s in created if s.planned is not None]
    assert len(planned) == len(created), "a new deployment always comes from a plan"
    return {
        "index": index,
        "ids": [i for i, _ in created],
        "namespaces": [s.namespace for _, s in created],
        "job_ids": [s.job_id for _, s in created],
        "job_versions": [s.job_version for _, s in created],
        "job_modify_indexes": [p.job_modify_index for p in planned],
        "job_create_indexes": [p.job_create_index for p in planned],
        "statuses": [s.status for _, s in created],
        "descriptions": [s.status_description for _, s in created],
        "groups": [Jsonb(dict(s.task_groups)) for _, s in created],
        "priorities": [p.eval_priority for p in planned],
    }
