"""The commit-ordered state index behind X-Nomad-Index, blocking queries and check-and-set."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import CursorResult, text
from sqlalchemy.orm import Session

from app.store.sql import query


def next_index(session: Session, tables: Iterable[str]) -> int:
    """Take the next index for a write touching `tables`.

    It must be the first write of the transaction: every writer locks the '_global' row
    first and everything else after it, one lock order, so writers cannot deadlock.
    Both rules are enforced, not just documented.
    """
    names = sorted(set(tables))
    if session.execute(text("SELECT pg_current_xact_id_if_assigned()")).scalar_one() is not None:
        raise RuntimeError("next_index must be the first write of the transaction")
    index = session.execute(query("bump_global")).scalar_one()
    stamped = session.execute(query("stamp_tables"), {"index": index, "tables": names})
    assert isinstance(stamped, CursorResult)
    if stamped.rowcount != len(names):
        # An unknown name would silently never wake the blocking queries that watch it.
        raise RuntimeError(f"next_index: some of {names} are not state index names (stamped {stamped.rowcount})")
    session.execute(query("notify_change"))
    return int(index)


def current_index(session: Session, tables: Iterable[str]) -> int:
    return int(session.execute(query("read_tables"), {"tables": list(tables)}).scalar_one())


def all_indexes(session: Session) -> dict[str, int]:
    return {str(name): int(value) for name, value in session.execute(query("read_all"))}
