"""Node registration, eligibility, and the node-update evaluations they imply."""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import Text, and_, cast, exists, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.models import Allocation, Job, Node, NodePool
from app.scheduler.feasibility.computed_class import computed_class
from app.store import host_volumes
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.node.heartbeat_ttl import HeartbeatPolicy, grant
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.values.errors import Forbidden, InvalidInput, NotFound
from app.values.ids import secret_hash, secret_matches
from app.wire.node import DriverInfoJson, HostVolumeInfoJson, NodeReservedResourcesJson, NodeResourcesJson

DEFAULT_HEARTBEAT = HeartbeatPolicy()

# Changes to these mean feasibility may have changed: Nomad re-evaluates the node's jobs.
# "column.Key" names a key of a JSONB column (the NodeResources object as the client sent it).
FINGERPRINT_FIELDS = (
    "datacenter",
    "name",
    "node_class",
    "node_pool",
    "attributes",
    "meta",
    "drivers",
    "host_volumes",
    "node_resources.Devices",
    "node_resources.HostVolumes",
    "node_resources.HostNetworks",
)


# A node row's lock for a change that keeps its key: FOR NO KEY UPDATE, which does not conflict
# with the FOR KEY SHARE lock every allocation insert takes on its node (the foreign key), so a
# node marked down or drained never deadlocks with the applier's COPY of placements onto it.
NODE_ROW_LOCK = {"key_share": True}


def _no_resources() -> NodeResourcesJson:
    return {}


def _no_reserved() -> NodeReservedResourcesJson:
    return {}


@dataclass(frozen=True)
class NodeRegistration:
    id: uuid.UUID
    secret_id: str | None
    name: str
    datacenter: str
    node_class: str
    node_pool: str
    status: str
    attributes: dict[str, str]
    meta: dict[str, str]
    drivers: dict[str, DriverInfoJson]
    cpu_shares: int
    memory_mb: int
    disk_mb: int
    reserved_cpu: int = 0
    reserved_memory_mb: int = 0
    reserved_disk_mb: int = 0
    reserved_ports: str = ""
    node_resources: NodeResourcesJson = field(default_factory=_no_resources)
    reserved_resources: NodeReservedResourcesJson = field(default_factory=_no_reserved)
    http_addr: str = ""
    host_volumes: dict[str, HostVolumeInfoJson] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeWriteResult:
    node_id: uuid.UUID
    secret_id: str | None
    heartbeat_ttl: timedelta | None
    eval_ids: list[uuid.UUID]
    eval_create_index: int
    node_modify_index: int
    index: int


def register_node(
    session: Session, reg: NodeRegistration, heartbeat: HeartbeatPolicy = DEFAULT_HEARTBEAT
) -> NodeWriteResult:
    index = next_index(session, ["nodes", "node_pools", "evaluations"])
    lock_object(session, ObjectKind.NODE, str(reg.id))  # a first registration has no row to lock
    existing = session.get(Node, reg.id, with_for_update=NODE_ROW_LOCK)
    if existing is not None and (reg.secret_id is None or not secret_matches(reg.secret_id, existing.secret_hash)):
        raise Forbidden.of("Node.SecretID", "does not match the secret of the registered node")
    secret = reg.secret_id or str(uuid.uuid4())
    _ensure_pool(session, reg.node_pool, index)
    now = datetime.now(UTC)
    before = _fingerprint(existing) if existing is not None else None
    capacity_before = _capacity(existing) if existing is not None else None
    was_ready = existing is not None and existing.status == "ready"
    node = existing or Node(id=reg.id, create_index=index, created_at=now, scheduling_eligibility="eligible")
    _apply_registration(node, reg, secret, index, now)
    if existing is None:
        session.add(node)
    session.flush()
    # The dynamic host volumes the client reports (with their IDs) are ready; the rest of the
    # node's, once ready, are not.
    host_volumes.apply_fingerprint(session, node.id, reg.host_volumes)
    beat = grant(session, node.id, secret, heartbeat)
    assert beat is not None  # the row was just written with this secret
    ttl = beat.ttl
    eval_ids: list[uuid.UUID] = []
    if node.status == "ready" and (not was_ready or before != _fingerprint(node)):
        eval_ids = create_node_evals(session, node, index)
    if node.status == "ready" and (not was_ready or before != _fingerprint(node) or capacity_before != _capacity(node)):
        # Same transaction as the change: no blocked evaluation can miss this capacity.
        unblock_capacity(session, {node.id: node.computed_class}, index)
    return NodeWriteResult(node.id, secret, ttl, eval_ids, index if eval_ids else 0, index, index)


def _capacity(node: Node) -> tuple[int, ...]:
    return (
        node.cpu_shares - node.reserved_cpu,
        node.memory_mb - node.reserved_memory_mb,
        node.disk_mb - node.reserved_disk_mb,
    )


def _ensure_pool(session: Session, name: str, index: int) -> None:
    session.execute(
        pg_insert(NodePool)
        .values(name=name, create_index=index, modify_index=index)
        .on_conflict_do_nothing(index_elements=["name"])
    )


def _fingerprint(node: Node) -> tuple[object, ...]:
    return tuple(_fingerprint_value(node, name) for name in FINGERPRINT_FIELDS)


def _fingerprint_value(node: Node, name: str) -> object:
    column, _, key = name.partition(".")
    value = getattr(node, column)
    if not key:
        return value
    return value.get(key) if isinstance(value, dict) else None


def _registered_status(current: str | None, wanted: str) -> str:
    """A node that was down or disconnected comes back through initializing whatever its
    registration says: it is ready only once its client has re-sent its allocations' state and
    said so in a heartbeat (heartbeats.py). A live node's update (new metadata, a driver's
    health) keeps the status its client sends, as Nomad's clients send ready after their
    first registration."""
    if current in ("down", "disconnected") and wanted == "ready":
        return "initializing"
    return wanted


def _apply_registration(node: Node, reg: NodeRegistration, secret: str, index: int, now: datetime) -> None:
    status = _registered_status(node.status if node.create_index != index else None, reg.status)
    if node.status != status:
        node.status_updated_at = now
    node.secret_hash = secret_hash(secret)
    node.name, node.datacenter, node.node_class, node.node_pool = (
        reg.name,
        reg.datacenter,
        reg.node_class,
        reg.node_pool,
    )
    node.status = status
    node.attributes, node.meta, node.drivers = reg.attributes, reg.meta, reg.drivers
    node.cpu_shares, node.memory_mb, node.disk_mb = reg.cpu_shares, reg.memory_mb, reg.disk_mb
    node.reserved_cpu, node.reserved_memory_mb = reg.reserved_cpu, reg.reserved_memory_mb
    node.reserved_disk_mb, node.reserved_ports = reg.reserved_disk_mb, reg.reserved_ports
    node.node_resources, node.reserved_resources = reg.node_resources, reg.reserved_resources
    node.http_addr = reg.http_addr
    node.host_volumes = reg.host_volumes
    node.computed_class = computed_class(
        datacenter=reg.datacenter,
        node_class=reg.node_class,
        node_pool=reg.node_pool,
        attributes=reg.attributes,
        meta=reg.meta,
        devices=reg.node_resources.get("Devices"),
    )
    node.modify_index = index
    node.updated_at = now


def create_node_evals(session: Session, node: Node, index: int) -> list[uuid.UUID]:
    """One node-update evaluation per job with work on the node, plus one per system job
    that could run there (seed: eval triggers, node-update)."""
    jobs = {(j.namespace, j.id): j for j in [*_jobs_with_allocs_on(session, node), *_system_jobs_for(session, node)]}
    created = []
    for job in sorted(jobs.values(), key=lambda j: (j.namespace, j.id)):
        evaluation = insert_eval(
            session,
            EvalRequest(
                namespace=job.namespace,
                job_id=job.id,
                job_type=job.type,
                priority=job.priority,
                triggered_by="node-update",
                job_modify_index=job.job_modify_index,
                node_id=node.id,
                node_modify_index=node.modify_index,
            ),
            index,
        )
        created.append(evaluation.id)
    return created


def _jobs_with_allocs_on(session: Session, node: Node) -> Sequence[Job]:
    client_terminal = Allocation.client_status.in_(ALLOC_CLIENT_TERMINAL_STATUSES)
    server_terminal = Allocation.desired_status != "run"
    relevant = or_(
        and_(Job.type.in_(["service", "system"]), ~(client_terminal & server_terminal)),
        and_(Job.type == "batch", ~client_terminal),
    )
    has_work = exists().where(
        Allocation.namespace == Job.namespace, Allocation.job_id == Job.id, Allocation.node_id == node.id, relevant
    )
    # Key-share locks: a job that garbage collection is deleting right now is skipped once the
    # delete commits, instead of failing this write with a foreign-key error on its evaluation.
    return session.scalars(select(Job).where(has_work).with_for_update(key_share=True)).all()


def _system_jobs_for(session: Session, node: Node) -> list[Job]:
    candidates = session.scalars(
        select(Job)
        .where(
            Job.type == "system",
            Job.stop.is_(False),
            Job.purged_at.is_(None),
            Job.node_pool.in_([node.node_pool, "all"]),
        )
        .with_for_update(key_share=True)
    ).all()
    return [j for j in candidates if any(fnmatch.fnmatchcase(node.datacenter, dc) for dc in j.datacenters)]


def set_eligibility(session: Session, node_id: uuid.UUID, eligibility: str) -> NodeWriteResult:
    index = next_index(session, ["nodes", "evaluations"])
    node = get_node(session, node_id, for_update=True)
    if eligibility == "eligible" and node.drain:
        raise InvalidInput.of("Eligibility", "cannot mark a draining node eligible; cancel the drain first")
    became_eligible = node.scheduling_eligibility == "ineligible" and eligibility == "eligible"
    node.scheduling_eligibility = eligibility
    node.modify_index = index
    node.updated_at = datetime.now(UTC)
    session.flush()
    eval_ids = create_node_evals(session, node, index) if became_eligible and node.status == "ready" else []
    if became_eligible and node.status == "ready":
        unblock_capacity(session, {node.id: node.computed_class}, index)
    return NodeWriteResult(node.id, None, None, eval_ids, index if eval_ids else 0, index, index)


def get_node(session: Session, node_id: uuid.UUID, *, for_update: bool = False, deleting: bool = False) -> Node:
    """`for_update` locks the row for a change that keeps its key; `deleting` for its deletion."""
    lock = True if deleting else NODE_ROW_LOCK if for_update else None
    node = session.get(Node, node_id, with_for_update=lock)
    if node is None:
        raise NotFound.of("NodeID", f"node {node_id} not found")
    return node


def require_node(session: Session, node_id: uuid.UUID) -> None:
    """NotFound unless the node exists. A primary-key probe: every node's allocation watch asks
    on each wake, and loading the whole row (attributes, resources, drivers) costs the API far
    more CPU than the answer it guards."""
    if session.scalar(select(Node.id).where(Node.id == node_id)) is None:
        raise NotFound.of("NodeID", f"node {node_id} not found")


def list_nodes(session: Session, prefix: str | None) -> Sequence[Node]:
    stmt = select(Node).order_by(Node.name, Node.id)
    if prefix:
        stmt = stmt.where(cast(Node.id, Text).startswith(prefix.lower()))
    return session.scalars(stmt).all()


def ready_nodes_at(session: Session, hosts: Sequence[str]) -> Sequence[Node]:
    """The ready nodes whose client advertises its HTTP API on one of these hosts (IPv6 ones
    bracketed, as an address with a port spells them)."""
    if not hosts:
        return []
    prefixes = [f"[{host}]:" if ":" in host else f"{host}:" for host in hosts]
    where = or_(*(Node.http_addr.startswith(prefix, autoescape=True) for prefix in prefixes))
    return session.scalars(select(Node).where(Node.status == "ready", where).order_by(Node.name, Node.id)).all()


def node_allocations(session: Session, node_id: uuid.UUID) -> Sequence[Allocation]:
    require_node(session, node_id)
    return session.scalars(
        select(Allocation).where(Allocation.node_id == node_id).order_by(Allocation.create_index)
    ).all()
