"""Dispatching a parameterized job: the child `<parent>/dispatch-<unix time>-<8 hex>` (or
`<parent>/dispatch-<prefix template>-<unix time>-<8 hex>`) and its evaluation commit together
(Nomad does the same since 1.10.5), after the payload and meta are checked against the parent's
`parameterized` block. A dispatch with an idempotency token whose child still exists returns
that child and creates nothing (Nomad's Job.Dispatch)."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Job
from app.store.job.job_children import derive_child, launch_child
from app.values.errors import FieldProblem, InvalidInput, NotFound
from app.wire.job import JobSpec, ParameterizedJobConfigSpec

MAX_PAYLOAD_BYTES = 16 * 1024  # Nomad's DispatchPayloadSizeLimit


@dataclass(frozen=True)
class DispatchResult:
    child_id: str
    eval_id: uuid.UUID | None  # None: an earlier dispatch with the same idempotency token
    eval_create_index: int
    job_create_index: int
    index: int


@dataclass(frozen=True)
class DispatchOptions:
    """What a dispatch asks beyond payload and meta (Nomad's JobDispatchRequest and ?idempotency_token)."""

    idempotency_token: str = ""
    id_prefix_template: str = ""
    priority: int = 0  # 0: the parent's


def check_dispatch(config: ParameterizedJobConfigSpec, payload: bytes, meta: dict[str, str]) -> list[FieldProblem]:
    """Every way the payload and meta break the parent's `parameterized` block."""
    problems: list[FieldProblem] = []
    mode = config.get("Payload") or "optional"
    if mode == "required" and not payload:
        problems.append(FieldProblem("Payload", "is required by the job (parameterized payload = required)"))
    if mode == "forbidden" and payload:
        problems.append(FieldProblem("Payload", "is not allowed by the job (parameterized payload = forbidden)"))
    if len(payload) > MAX_PAYLOAD_BYTES:
        problems.append(FieldProblem("Payload", f"must be at most {MAX_PAYLOAD_BYTES} bytes, got {len(payload)}"))
    required = _strings(config.get("MetaRequired"))
    allowed = {*required, *_strings(config.get("MetaOptional"))}
    problems += [
        FieldProblem(f"Meta.{key}", "is required by the job (meta_required)") for key in required if key not in meta
    ]
    problems += [
        FieldProblem(f"Meta.{key}", f"is not allowed: the job permits only {sorted(allowed) or 'no keys'}")
        for key in sorted(meta)
        if key not in allowed
    ]
    return problems


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def dispatch_job(
    session: Session,
    namespace: str,
    job_id: str,
    payload: bytes,
    meta: dict[str, str],
    now: datetime | None = None,
    options: DispatchOptions = DispatchOptions(),
) -> DispatchResult:
    index = next_index(session, ["jobs", "evaluations"])
    # FOR NO KEY UPDATE on the parent: job GC cannot delete it under the child (jobs.parent_id is
    # a foreign key), and two dispatches of one parent take turns, so a retried dispatch with an
    # idempotency token sees the child of the first one.
    parent = session.get(Job, (namespace, job_id), with_for_update={"key_share": True})
    if parent is None or parent.purged_at is not None:
        raise NotFound.of("JobID", f"job {job_id!r} not found in namespace {namespace!r}")
    if not parent.parameterized or parent.dispatched:
        raise InvalidInput.of("JobID", f"job {job_id!r} is not a parameterized job")
    if parent.stop:
        raise InvalidInput.of("JobID", f"job {job_id!r} is stopped and cannot be dispatched")
    problems = check_dispatch(parent.spec["ParameterizedJob"], payload, meta)
    if problems:
        raise InvalidInput(problems)
    if options.idempotency_token:
        earlier = _child_with_token(session, parent, options.idempotency_token)
        if earlier is not None:
            return DispatchResult(earlier.id, None, 0, earlier.create_index, earlier.modify_index)
    stamp = int((now or datetime.now(UTC)).timestamp())
    name = _child_name(job_id, options.id_prefix_template, stamp)
    while session.get(Job, (namespace, name)) is not None:  # 32 random bits: all but never taken
        name = _child_name(job_id, options.id_prefix_template, stamp)
    fields: JobSpec = {
        "Dispatched": True,
        "Meta": {**(parent.spec.get("Meta") or {}), **meta},
        "Payload": base64.b64encode(payload).decode() if payload else None,
        "DispatchIdempotencyToken": options.idempotency_token,
        "Priority": options.priority or parent.spec.get("Priority", 50),
    }
    child, evaluation = launch_child(session, derive_child(parent, name, fields), "job-register", index)
    return DispatchResult(child.id, evaluation.id, index, child.create_index, index)


def _child_name(job_id: str, prefix_template: str, stamp: int) -> str:
    prefix = f"{prefix_template}-" if prefix_template else ""
    return f"{job_id}/dispatch-{prefix}{stamp}-{uuid.uuid4().hex[:8]}"


def _child_with_token(session: Session, parent: Job, token: str) -> Job | None:
    """A child of `parent` dispatched with `token` and not purged (Nomad's CheckIdempotencyToken)."""
    return session.scalars(
        select(Job)
        .where(
            Job.namespace == parent.namespace,
            Job.parent_id == parent.id,
            Job.purged_at.is_(None),
            Job.spec["DispatchIdempotencyToken"].astext == token,
        )
        .order_by(Job.create_index)
        .limit(1)
    ).first()
