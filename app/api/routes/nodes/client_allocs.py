"""GET /v1/node/:node_id/allocations?client_since=N: the node's allocations as corral's own
client watches them (app.store.node.client_allocs). Nomad's clients, which send no such
parameter, keep Nomad's answer."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict

from sqlalchemy.orm import Session

from app.api.encoders import encode
from app.store.node.client_allocs import ClientAllocRow, VersionStamp, node_client_allocations, version_row
from app.wire.allocation import AllocationJson
from app.wire.api.api_nodes import ClientAllocJson
from app.wire.job import JobSpec

CLIENT_SINCE = "client_since"


# The encoded jobs of recent versions, per API process: a job of count N placed on a fleet wakes
# N node watches that each answer with the same version's job.
JOBS_KEPT = 64
_jobs: OrderedDict[VersionStamp, JobSpec] = OrderedDict()
_jobs_lock = threading.Lock()


def client_allocations(session: Session, node_id: uuid.UUID, since: int) -> list[ClientAllocJson]:
    found = node_client_allocations(session, node_id, since)
    whole = {
        alloc.id: encode.allocation(alloc, job=None if stamp is None else _job(session, stamp))
        for alloc, stamp in found.changed
    }
    return [_entry(row, whole.get(row.id)) for row in found.rows]


def _job(session: Session, stamp: VersionStamp) -> JobSpec | None:
    """The allocation's Job at its version: encoded once per stamp and process. Shared between
    answers, so nothing may change it (encode.allocation and jsonify only read it)."""
    with _jobs_lock:
        job = _jobs.get(stamp)
        if job is not None:
            _jobs.move_to_end(stamp)
            return job
    row = version_row(session, stamp)
    if row is None:
        return None
    job = encode.allocation_job(row)
    with _jobs_lock:
        _jobs[stamp] = job
        while len(_jobs) > JOBS_KEPT:
            _jobs.popitem(last=False)
    return job


def _entry(row: ClientAllocRow, whole: AllocationJson | None) -> ClientAllocJson:
    return {
        "ID": str(row.id),
        "AllocModifyIndex": row.alloc_modify_index,
        "DesiredStatus": row.desired_status,
        "ClientStatus": row.client_status,
        "DeploymentID": encode.ident(row.deployment_id),
        "DesiredTransition": row.desired_transition,
        "Allocation": whole,
    }
