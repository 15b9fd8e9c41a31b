"""The commit-ordered state index behind X-Nomad-Index, blocking queries and check-and-set."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from app.store.sql import query


def next_index(session: Session, tables: Iterable[str]) -> int:
    """Take the next index for a write touching `tables`. Call it first in the transaction."""
    index = session.execute(query("bump_global")).scalar_one()
    session.execute(query("stamp_tables"), {"index": index, "tables": list(tables)})
    session.execute(query("notify_change"))
    return int(index)


def current_index(session: Session, tables: Iterable[str]) -> int:
    return int(session.execute(query("read_tables"), {"tables": list(tables)}).scalar_one())


def all_indexes(session: Session) -> dict[str, int]:
    return {str(name): int(value) for name, value in session.execute(query("read_all"))}
