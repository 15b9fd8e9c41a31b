"""Allocation reads for the API. Only the plan applier writes placements."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from app.errors import NotFound
from app.models import Allocation


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
