"""The commit-ordered state index behind X-Nomad-Index, blocking queries and check-and-set."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy.orm import Session

from app.store.sql import query


def next_index(session: Session, tables: Iterable[str], *, notify: bool = True) -> int:
    """Take the next index for a write touching `tables`, in one round trip.

    It must be the first write of the transaction: every writer locks the '_global' row
    first and everything else after it, one lock order, so writers cannot deadlock.
    Both rules are enforced, not just documented. `notify` wakes listeners (blocking
    queries, idle workers, the applier); writes nobody waits for can skip it, since
    listeners also poll."""
    names = sorted(set(tables))
    row = session.execute(query("take_index"), {"tables": names, "notify": notify}).one()
    if not row.first_write:
        raise RuntimeError("next_index must be the first write of the transaction")
    if row.stamped != len(names):
        # An unknown name would silently never wake the blocking queries that watch it.
        raise RuntimeError(f"next_index: some of {names} are not state index names (stamped {row.stamped})")
    return int(row.taken)


def current_index(session: Session, tables: Iterable[str]) -> int:
    return int(session.execute(query("read_tables"), {"tables": list(tables)}).scalar_one())


def all_indexes(session: Session) -> dict[str, int]:
    return {str(name): int(value) for name, value in session.execute(query("read_all"))}


def node_index(session: Session, node_id: uuid.UUID) -> int:
    """The highest index of a change to the node or to one of its allocations."""
    return int(session.execute(query("node_index"), {"node_id": node_id}).scalar_one())
