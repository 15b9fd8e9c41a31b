"""Operations that revisions use so a migration can run under a live cluster.

An index built in a transaction holds a SHARE lock on its table for the whole build: every
claim, placement and heartbeat writing that table waits. Built CONCURRENTLY it takes only a
SHARE UPDATE EXCLUSIVE lock, which writers do not conflict with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from alembic import op

# Tables written on every evaluation, placement or heartbeat: an index on one of them is built
# CONCURRENTLY (tests/unit/test_migration_rules.py holds new revisions to it).
HOT_TABLES = frozenset(
    {"evaluations", "allocations", "plans", "nodes", "node_heartbeats", "node_usage", "jobs", "state_index", "events"}
)


def create_index_concurrently(name: str, table: str, columns: Sequence[str], **options: Any) -> None:
    """CREATE INDEX CONCURRENTLY, outside the revision's transaction. A build that gave way
    (lock_timeout) or failed leaves an INVALID index of the same name behind: it is dropped
    first, so the retried revision builds it whole."""
    with op.get_context().autocommit_block():
        op.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
        op.create_index(name, table, list(columns), postgresql_concurrently=True, **options)


def drop_index_concurrently(name: str) -> None:
    """DROP INDEX CONCURRENTLY: waits for the queries using the index instead of blocking them."""
    with op.get_context().autocommit_block():
        op.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
