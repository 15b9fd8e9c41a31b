"""Namespaces as objects (Nomad's /v1/namespaces): 'default' always exists and cannot go."""

from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import Job, Namespace
from app.values.errors import InvalidInput, NotFound

DEFAULT = "default"


def list_namespaces(session: Session, prefix: str = "") -> list[Namespace]:
    query = select(Namespace).order_by(Namespace.name)
    if prefix:
        query = query.where(Namespace.name.startswith(prefix, autoescape=True))
    return list(session.scalars(query))


def get_namespace(session: Session, name: str) -> Namespace:
    found = session.get(Namespace, name)
    if found is None:
        raise NotFound.of("Name", f"namespace {name!r} not found")
    return found


def upsert_namespace(session: Session, name: str, description: str, meta: dict[str, str]) -> int:
    index = next_index(session, ["namespaces"])
    session.execute(
        pg_insert(Namespace)
        .values(name=name, description=description, meta=meta, create_index=index, modify_index=index)
        .on_conflict_do_update(
            index_elements=["name"], set_={"description": description, "meta": meta, "modify_index": index}
        )
    )
    return index


def delete_namespace(session: Session, name: str) -> int:
    if name == DEFAULT:
        raise InvalidInput.of("Name", "the default namespace cannot be deleted")
    index = next_index(session, ["namespaces"])
    found = session.get(Namespace, name, with_for_update=True)
    if found is None:
        raise NotFound.of("Name", f"namespace {name!r} not found")
    if session.scalar(select(exists().where(Job.namespace == name))):
        raise InvalidInput.of("Name", f"namespace {name!r} still has jobs; purge them first")
    session.delete(found)
    return index
