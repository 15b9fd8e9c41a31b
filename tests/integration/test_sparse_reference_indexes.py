"""Revision 0022: the reference indexes of evaluations and allocations hold only the rows that
have a reference, and still serve every lookup by one ID (a generic plan included, as the
foreign keys' cascades and prepared statements run); the duplicate blocked index is gone."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]

SPARSE = [
    ("evaluations", "node_id"),
    ("evaluations", "deployment_id"),
    ("evaluations", "next_eval"),
    ("evaluations", "previous_eval"),
    ("evaluations", "blocked_eval"),
    ("allocations", "previous_allocation"),
]


@pytest.mark.parametrize(("table", "column"), SPARSE)
def test_a_reference_index_holds_only_rows_with_a_reference(pg: Conn, table: str, column: str) -> None:
    row = pg.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"ix_{table}_{column}",)).fetchone()
    assert row is not None
    assert str(row[0]).endswith(f"WHERE ({column} IS NOT NULL)")


@pytest.mark.parametrize(("table", "column"), SPARSE)
def test_a_lookup_by_one_id_uses_it_in_a_generic_plan(pg: Conn, table: str, column: str) -> None:
    pg.execute("SET plan_cache_mode = force_generic_plan")
    pg.execute("SET enable_seqscan = off")  # an empty table: only whether the index qualifies counts
    pg.execute(f"PREPARE lookup (uuid) AS SELECT 1 FROM {table} WHERE {column} = $1")
    plan = "\n".join(str(r[0]) for r in pg.execute("EXPLAIN EXECUTE lookup (gen_random_uuid())").fetchall())
    assert f"ix_{table}_{column}" in plan, plan


def test_the_duplicate_blocked_index_is_gone(pg: Conn) -> None:
    names = {str(r[0]) for r in pg.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'evaluations'")}
    assert "ix_evaluations_blocked" not in names
    assert "uq_evaluations_blocked_job" in names
