"""Allocation reads for the API, and `alloc stop`. Only the plan applier writes placements."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation, Job
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.sql import query
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import InvalidInput, NotFound
from app.wire.allocation import DesiredTransitionJson


def list_allocations(session: Session, namespace: str | None, prefix: str | None) -> Sequence[Allocation]:
    stmt = select(Allocation).order_by(Allocation.create_index, Allocation.id)
    if namespace is not None:
        stmt = stmt.where(Allocation.namespace == namespace)
    if prefix:
        stmt = stmt.where(cast(Allocation.id, Text).startswith(prefix.lower()))
    return session.scalars(stmt).all()


def get_allocation(session: Session, alloc_id: uuid.UUID) -> Allocation:
    alloc = session.get(Allocation, alloc_id)
    if alloc is None:
        raise NotFound.of("AllocID", f"allocation {alloc_id} not found")
    return alloc


def placement_metrics_texts(session: Session, alloc_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The allocations' placement metrics in revision 0037's text column (compact JSON,
    app.wire.plan.PlacedMetricsJson), by ID; an allocation without is left out (its metrics, if
    any, are in the jsonb Allocation.metrics). One statement, on either schema."""
    if not alloc_ids:
        return {}
    rows = session.execute(query("placement_metrics_texts"), {"ids": list(alloc_ids)})
    return {row.id: row.placement_metrics for row in rows if row.placement_metrics}


def stop_allocation(session: Session, alloc_id: uuid.UUID, no_shutdown_delay: bool = False) -> tuple[uuid.UUID, int]:
    """Nomad's Alloc.Stop: mark the allocation to migrate (DesiredTransition.Migrate, as a
    drain does) and create one alloc-stop evaluation for its job in the same transaction; the
    scheduler stops it and places a replacement. NoShutdownDelay tells its client to kill the
    tasks without waiting out their shutdown_delay. Returns (evaluation id, index)."""
    index = next_index(session, ["allocations", "evaluations"])
    alloc = session.get(Allocation, alloc_id, with_for_update=True)
    if alloc is None:
        raise NotFound.of("AllocID", f"allocation {alloc_id} not found")
    if alloc.desired_status != "run" or alloc.client_status in ALLOC_CLIENT_TERMINAL_STATUSES:
        raise InvalidInput.of(
            "AllocID",
            f"allocation {alloc_id} is already terminal (desired {alloc.desired_status}, client {alloc.client_status})",
        )
    # Key-share, as every writer that adds an evaluation to an existing job: job GC locks the
    # job before deleting it, and a job with a live allocation is never its candidate anyway.
    job = session.get(Job, (alloc.namespace, alloc.job_id), with_for_update={"key_share": True})
    if job is None:
        raise NotFound.of("JobID", f"job {alloc.job_id!r} of allocation {alloc_id} not found")
    transition: DesiredTransitionJson = {**(alloc.desired_transition or {}), "Migrate": True}
    if no_shutdown_delay:
        transition["NoShutdownDelay"] = True
    alloc.desired_transition = transition
    alloc.modify_index = alloc.alloc_modify_index = index
    request = EvalRequest(
        namespace=job.namespace,
        job_id=job.id,
        job_type=job.type,
        priority=job.priority,
        triggered_by="alloc-stop",
        job_modify_index=job.job_modify_index,
    )
    return insert_eval(session, request, index).id, index
