"""GET /v1/node/:node_id/allocations?client_since=N: the node's allocations as corral's own
client watches them (app.store.node.client_allocs). Nomad's clients, which send no such
parameter, keep Nomad's answer."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from app.api.encoders import encode
from app.store.node.client_allocs import ClientAllocRow, node_client_allocations
from app.wire.allocation import AllocationJson
from app.wire.api.api_nodes import ClientAllocJson

CLIENT_SINCE = "client_since"


def client_allocations(session: Session, node_id: uuid.UUID, since: int) -> list[ClientAllocJson]:
    found = node_client_allocations(session, node_id, since)
    whole = {
        alloc.id: encode.allocation(alloc, job_spec=None if version is None else encode.version_spec(version))
        for alloc, version in found.changed
    }
    return [_entry(row, whole.get(row.id)) for row in found.rows]


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
