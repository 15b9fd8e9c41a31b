"""Node pools as objects (Nomad's /v1/node/pools): 'default' and 'all' are built in and cannot
be changed or deleted; a pool in use by nodes or by jobs that are not dead cannot be deleted.
Nodes create the pool they name when they register (app/store/node/nodes.py), as Nomad's do."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import exists, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Job, Node, NodePool
from app.values.errors import InvalidInput, NotFound

ALL, DEFAULT = "all", "default"
BUILT_IN = (ALL, DEFAULT)


@dataclass(frozen=True)
class PoolSpec:
    name: str
    description: str
    meta: dict[str, str]


def list_pools(session: Session, prefix: str = "") -> list[NodePool]:
    query = select(NodePool).order_by(NodePool.name)
    if prefix:
        query = query.where(NodePool.name.startswith(prefix, autoescape=True))
    return list(session.scalars(query))


def get_pool(session: Session, name: str) -> NodePool:
    found = session.get(NodePool, name)
    if found is None:
        raise NotFound.of("Name", "node pool not found")
    return found


def upsert_pool(session: Session, spec: PoolSpec) -> int:
    if spec.name in BUILT_IN:
        raise InvalidInput.of("Name", f"modifying node pool {spec.name!r} is not allowed")
    index = next_index(session, ["node_pools"])
    values: dict[str, object] = {"description": spec.description, "meta": spec.meta}
    session.execute(
        pg_insert(NodePool)
        .values(name=spec.name, create_index=index, modify_index=index, **values)
        .on_conflict_do_update(index_elements=["name"], set_={**values, "modify_index": index})
    )
    return index


def delete_pool(session: Session, name: str) -> int:
    if name in BUILT_IN:
        raise InvalidInput.of("Name", f"deleting built-in node pool {name!r} is not allowed")
    index = next_index(session, ["node_pools"])
    found = session.get(NodePool, name, with_for_update=True)
    if found is None:
        raise NotFound.of("Name", f"node pool {name!r} not found")
    if session.scalar(select(exists().where(Job.node_pool == name, Job.status != "dead"))):
        raise InvalidInput.of("Name", f"node pool {name!r} has non-terminal jobs")
    if session.scalar(select(exists().where(Node.node_pool == name))):
        raise InvalidInput.of("Name", f"node pool {name!r} has nodes")
    session.delete(found)
    return index


def pool_nodes(session: Session, name: str) -> list[Node]:
    """The pool's nodes ('all': every node), by ID."""
    get_pool(session, name)
    query = select(Node).order_by(Node.id)
    if name != ALL:
        query = query.where(Node.node_pool == name)
    return list(session.scalars(query))


def pool_jobs(session: Session, name: str, namespace: str | None) -> list[Job]:
    """The jobs that target the pool (for 'all', those that target 'all', as Nomad's), in
    `namespace` (None: every namespace), by namespace and ID."""
    get_pool(session, name)
    query = select(Job).where(Job.node_pool == name).order_by(Job.namespace, Job.id)
    if namespace is not None:
        query = query.where(Job.namespace == namespace)
    return list(session.scalars(query))
