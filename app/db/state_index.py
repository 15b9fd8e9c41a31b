"""The state index behind X-Nomad-Index, blocking queries and check-and-set.

A write's index is its transaction ID (plus a fixed offset, migration 0015): unique, taken
without any lock, increasing in the order transactions first write, but NOT in commit order.
So a reader never reports a raw index: it reports at most `safe_index`, its snapshot's xmin
minus one. Every transaction with an index at or below that has finished, and its changes, if
committed, are in the reader's snapshot: a blocking query that returned index I can never
later meet a change at or below I that it did not see. (The snapshot may also hold some changes
above I; they are reported early and wake the next query once the safe index passes them.)
docs/architecture.md, "The state index", has the measurements and the alternatives."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy.orm import Session

from app.store.sql import query

GLOBAL = "_global"  # not a table: "any change at all"


def next_index(session: Session, tables: Iterable[str], *, notify: bool = True) -> int:
    """This transaction's index, logged against `tables` (the tables whose blocking queries it
    must wake). Any point of the transaction will do and calling it twice is harmless: the index
    is the transaction's own ID, assigned at its first write, and it waits for no one. `notify`
    wakes listeners (blocking queries, idle workers, the applier); writes nobody waits for can
    skip it, since listeners also poll. Writes no blocking query watches take no index at all."""
    names = sorted(set(tables))
    row = session.execute(query("take_index"), {"tables": names, "notify": notify}).one()
    if row.stamped != len(names):
        # An unknown name would silently never wake the blocking queries that watch it.
        raise RuntimeError(f"next_index: some of {names} are not state index names (known {row.stamped})")
    return int(row.taken)


def safe_index(session: Session) -> int:
    """The highest index this session's snapshot is complete up to: every transaction with an
    index at or below it has finished. Anything that reports or delivers changes by index
    (X-Nomad-Index, an event stream) delivers only those at or below it; under REPEATABLE READ
    the value belongs to the transaction's snapshot, so read it in the same transaction as the
    data."""
    return int(session.execute(query("safe_index")).scalar_one())


def current_index(session: Session, tables: Iterable[str]) -> int:
    """The highest index of a change to `tables` (or to anything, with '_global') at or below
    the safe index: the X-Nomad-Index of a read of those tables in this snapshot."""
    names = list(tables)
    if GLOBAL in names:
        return int(session.execute(query("read_latest")).scalar_one())
    return int(session.execute(query("read_tables"), {"tables": names}).scalar_one())


def all_indexes(session: Session) -> dict[str, int]:
    """current_index of every name, and of '_global'."""
    indexes = {str(name): int(value) for name, value in session.execute(query("read_all"))}
    return indexes | {GLOBAL: max(indexes.values(), default=0)}


class NodeWatchIndexes(NamedTuple):
    tables_index: int  # current_index(tables)
    node_index: int  # the newest change to the node or to one of its allocations
    node_server_index: int  # the same, leaving out what its client reported (alloc_modify_index)


def node_watch_indexes(session: Session, tables: Iterable[str], node_id: uuid.UUID) -> NodeWatchIndexes:
    """current_index(tables), and the highest index of a change to the node or to one of its
    allocations at or below the safe index, with and without its client's own status reports:
    what a node's allocation watch asks on every wake, in one statement."""
    row = session.execute(query("node_watch_indexes"), {"tables": list(tables), "node_id": node_id}).one()
    return NodeWatchIndexes(int(row.tables_index), int(row.node_index), int(row.node_server_index))


def compact(session: Session) -> int:
    """Delete the log rows no reader needs any more; returns how many."""
    return int(session.execute(query("compact")).rowcount)  # type: ignore[attr-defined]
