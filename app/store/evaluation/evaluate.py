"""Nomad's forced evaluations: `job eval` (Job.Evaluate) and `node eval` (Node.Evaluate). Each
commits its evaluations together with what it marks (invariant 5)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import func, literal, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Allocation
from app.store.job.job_reads import get_job
from app.store.job.job_rows import job_evaluation
from app.store.job.jobs import WriteResult
from app.store.node.nodes import create_node_evals, get_node
from app.values.errors import InvalidInput


def evaluate_job(session: Session, namespace: str, job_id: str, *, force_reschedule: bool) -> WriteResult:
    """A job-register evaluation of the job as it is. With force_reschedule, its failed
    allocations are marked DesiredTransition.ForceReschedule first, as Nomad does."""
    index = next_index(session, ["evaluations", "allocations"] if force_reschedule else ["evaluations"])
    job = get_job(session, namespace, job_id)
    periodic, parameterized = job.spec.get("Periodic"), job.spec.get("ParameterizedJob")
    if isinstance(periodic, dict):
        raise InvalidInput.of("JobID", "can't evaluate periodic job: force a launch with /v1/job/<id>/periodic/force")
    if parameterized:
        raise InvalidInput.of("JobID", "can't evaluate parameterized job: dispatch it with /v1/job/<id>/dispatch")
    if force_reschedule:
        session.execute(
            update(Allocation)
            .where(
                Allocation.namespace == namespace,
                Allocation.job_id == job_id,
                Allocation.client_status == "failed",
                Allocation.desired_status == "run",
            )
            .values(
                desired_transition=Allocation.desired_transition.op("||")(
                    func.cast(literal('{"ForceReschedule": true}'), JSONB)
                ),
                modify_index=index,
            )
        )
    evaluation = job_evaluation(session, job, "job-register", index)
    return WriteResult(evaluation.id, index, job.job_modify_index, index)


@dataclass(frozen=True)
class NodeEvalResult:
    eval_ids: list[uuid.UUID]
    node_modify_index: int
    index: int


def evaluate_node(session: Session, node_id: uuid.UUID) -> NodeEvalResult:
    """One node-update evaluation per job with work on the node and per system job that could
    run there, as when the node's status changes."""
    index = next_index(session, ["evaluations"])
    node = get_node(session, node_id)
    return NodeEvalResult(create_node_evals(session, node, index), node.modify_index, index)
