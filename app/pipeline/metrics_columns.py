"""Whether the database has revision 0037's text columns for placement metrics
(plans.placement_metrics, allocations.placement_metrics).

A release's roles start on the schema one revision before its head and the upgrade runs under
them (docs/operations.md, rolling upgrades), so the worker and the applier ask before they use
the columns, and take the path of the schema before (the metrics inside the plan's JSON and in
the jsonb allocations.metrics) while the columns are missing. A database known to have them is
not asked again: revisions are not undone under running roles. One that lacked them is asked
again, by the applier at every batch (a plan written by a worker that already found them must
not lose its metrics in the applier's read) and by the worker after `recheck_s` (its older
path is only slower)."""

from __future__ import annotations

import time

import psycopg

# Both columns, or the older path: the revision adds them in one transaction.
PROBE = (
    "SELECT count(*) = 2 FROM pg_attribute WHERE attrelid IN ('plans'::regclass, 'allocations'::regclass)"
    " AND attname = 'placement_metrics' AND NOT attisdropped"
)

Database = tuple[str, int, str]  # host, port, name

_present: set[Database] = set()
_absent_at: dict[Database, float] = {}  # monotonic time of the probe that found them missing


def _database(pg: psycopg.Connection[tuple[object, ...]]) -> Database:
    return (pg.info.host, pg.info.port, pg.info.dbname)


def text_columns(pg: psycopg.Connection[tuple[object, ...]], recheck_s: float = 0.0) -> bool:
    """Whether the placement metrics go to the text columns on `pg`'s database. At most one
    catalog query, and none once they were found."""
    database = _database(pg)
    if database in _present:
        return True
    found_missing = _absent_at.get(database)
    if found_missing is not None and time.monotonic() - found_missing < recheck_s:
        return False
    row = pg.execute(PROBE).fetchone()
    if row is not None and row[0]:
        _present.add(database)
        _absent_at.pop(database, None)
        return True
    _absent_at[database] = time.monotonic()
    return False
