"""A node's allocations as its own client watches them: a few columns of each (what the client
acts on) and the whole rows of those the servers changed past the client's last answer.

Listing every allocation whole, with its job's type, cost a query per job and grew with the
allocations the node runs (130 ms for 24 of them at load 17): a client's wake-up after each
placement paid it, and then fetched the new allocation in a second round trip."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Text, cast, select, tuple_
from sqlalchemy.orm import Session

from app.models import Allocation, JobVersion, Node
from app.values.errors import NotFound
from app.wire.allocation import DesiredTransitionJson


@dataclass(frozen=True)
class ClientAllocRow:
    """What the client reconciles on: whether to run or stop it, and its deployment."""

    id: uuid.UUID
    alloc_modify_index: int
    desired_status: str
    client_status: str
    deployment_id: uuid.UUID | None
    desired_transition: DesiredTransitionJson


@dataclass(frozen=True)
class VersionStamp:
    """What identifies a job version's stored state without its spec: a fleet's watches ask for
    the same version thousands of times, and its spec (the costly part) is fetched only when
    this stamp is new to the asking process (app.api.routes.nodes.client_allocs)."""

    namespace: str
    job_id: str
    version: int
    job_modify_index: int  # a purged and registered again job reuses version numbers, not indexes
    stable: bool
    tag_modify: str  # the version tag as stored, in text (set and unset by `job tag`)

    @property
    def key(self) -> tuple[str, str, int]:
        return self.namespace, self.job_id, self.version


@dataclass(frozen=True)
class ClientAllocs:
    rows: list[ClientAllocRow]
    # The allocations changed on the servers' side past the client's index, whole, with the
    # stamp of the job version each runs (None when that version was pruned).
    changed: list[tuple[Allocation, VersionStamp | None]]


def node_client_allocations(session: Session, node_id: uuid.UUID, since: int) -> ClientAllocs:
    """NotFound when the node is unknown (its client registers again). The node's row is probed
    in the same statement (an outer join: no row at all means no node), as every wake of every
    node's watch asks this: one round trip less each."""
    listed = session.execute(
        select(
            Allocation.id,
            Allocation.alloc_modify_index,
            Allocation.desired_status,
            Allocation.client_status,
            Allocation.deployment_id,
            Allocation.desired_transition,
        )
        .select_from(Node)
        .outerjoin(Allocation, Allocation.node_id == Node.id)
        .where(Node.id == node_id)
        .order_by(Allocation.create_index)
    ).all()
    if not listed:
        raise NotFound.of("NodeID", f"node {node_id} not found")
    rows = [ClientAllocRow(r[0], r[1], r[2], r[3], r[4], r[5] or {}) for r in listed if r[0] is not None]
    wanted = [row.id for row in rows if row.alloc_modify_index > since]
    return ClientAllocs(rows, _whole(session, wanted))


def _whole(session: Session, ids: Sequence[uuid.UUID]) -> list[tuple[Allocation, VersionStamp | None]]:
    if not ids:
        return []
    allocs = session.scalars(select(Allocation).where(Allocation.id.in_(ids)).order_by(Allocation.create_index)).all()
    stamps = _stamps(session, {(a.namespace, a.job_id, a.job_version) for a in allocs})
    return [(a, stamps.get((a.namespace, a.job_id, a.job_version))) for a in allocs]


def _stamps(session: Session, keys: set[tuple[str, str, int]]) -> dict[tuple[str, str, int], VersionStamp]:
    """The versions' stamps, in one statement (no spec read)."""
    rows = session.execute(
        select(
            JobVersion.namespace,
            JobVersion.job_id,
            JobVersion.version,
            JobVersion.job_modify_index,
            JobVersion.stable,
            cast(JobVersion.version_tag, Text),
        ).where(tuple_(JobVersion.namespace, JobVersion.job_id, JobVersion.version).in_(sorted(keys)))
    ).all()
    found = (VersionStamp(r[0], r[1], r[2], r[3], r[4], r[5] or "") for r in rows)
    return {stamp.key: stamp for stamp in found}


def version_row(session: Session, stamp: VersionStamp) -> JobVersion | None:
    """The whole version a stamp names (None when it was pruned since)."""
    return session.get(JobVersion, stamp.key)
