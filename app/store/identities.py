"""Workload identities: signing a task's identities for the node that runs it (Nomad's
Alloc.SignIdentities), and resolving a presented identity to the access it carries."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.acl.capabilities import WorkloadClaim
from app.keyring import identity
from app.keyring.identity import IdentityError, IdentitySpec, Subject
from app.models import Allocation, JobVersion
from app.store import keyring
from app.wire.job import JobSpec, TaskSpec

# Nomad's WorkloadIdentityRejection reasons.
MISSING_ALLOC = "allocation not found"
MISSING_TASK = "task not found"
MISSING_IDENTITY = "identity not found"
CLIENT_TERMINAL = ("complete", "failed", "lost")


@dataclass(frozen=True)
class IdentityRequest:
    alloc_id: uuid.UUID
    task: str
    name: str = identity.DEFAULT_NAME


@dataclass(frozen=True)
class Signed:
    request: IdentityRequest
    jwt: str
    expiration_s: int  # Unix seconds; 0: never


@dataclass(frozen=True)
class Rejected:
    request: IdentityRequest
    reason: str


def task_identities(task: TaskSpec) -> list[IdentitySpec]:
    """The task's default identity (its `identity` block, or Nomad's default) and its named ones."""
    return [IdentitySpec.of(task.get("Identity")), *identity.named(task.get("Identities"))]


def _task(session: Session, alloc: Allocation, name: str) -> tuple[JobSpec, TaskSpec] | None:
    version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
    if version is None:
        return None
    for group in version.spec.get("TaskGroups") or []:
        if group.get("Name") == alloc.task_group:
            for task in group.get("Tasks") or []:
                if task.get("Name") == name:
                    return version.spec, task
    return None


def sign_for_node(
    session: Session, root: bytes, node_id: uuid.UUID, requests: list[IdentityRequest], issuer: str = ""
) -> tuple[list[Signed], list[Rejected]]:
    """Sign each requested identity of an allocation placed on `node_id` with the active key
    (with `iss` = `issuer` when the servers have an oidc_issuer)."""
    key = keyring.active_key(session, root)
    now = int(time.time())
    signed: list[Signed] = []
    rejected: list[Rejected] = []
    for request in requests:
        alloc = session.get(Allocation, request.alloc_id)
        if alloc is None or alloc.node_id != node_id:
            rejected.append(Rejected(request, MISSING_ALLOC))
            continue
        found = _task(session, alloc, request.task)
        if found is None:
            rejected.append(Rejected(request, MISSING_TASK))
            continue
        job, task = found
        spec = next((s for s in task_identities(task) if s.name == request.name), None)
        if spec is None:
            rejected.append(Rejected(request, MISSING_IDENTITY))
            continue
        subject = Subject(
            str(job.get("Region") or "global"),
            alloc.namespace,
            alloc.job_id,
            alloc.task_group,
            request.task,
            str(alloc.id),
        )
        body = identity.claims(subject, spec, now, issuer)
        signed.append(Signed(request, identity.sign(body, key.key_id, key.signing), int(body.get("exp", 0))))
    return signed, rejected


def resolve(session: Session, token: str) -> WorkloadClaim:
    """The claim of a presented identity: signed by a keyring key, within its validity, and
    for an allocation that still exists and has not finished (Nomad's ResolveClaims)."""
    public = keyring.public_key(session, identity.key_id_of(token))
    if public is None:
        raise IdentityError("invalid workload identity: unknown key")
    verified = identity.verify(token, public)
    try:
        alloc = session.get(Allocation, uuid.UUID(verified.alloc_id))
    except ValueError:
        alloc = None
    if alloc is None or alloc.client_status in CLIENT_TERMINAL or alloc.namespace != verified.namespace:
        raise IdentityError("allocation does not exist")
    return WorkloadClaim(alloc.namespace, alloc.job_id, alloc.task_group, verified.task)
