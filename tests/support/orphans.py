"""The airtight check: every foreign key and every soft reference resolves."""

from __future__ import annotations

import psycopg

Conn = psycopg.Connection[tuple[object, ...]]

# References the schema cannot declare (optional parents, markers keyed by class, the run log).
# jobs.parent_id is a real foreign key now, checked with the others below.
# Not checked, by decision: the history links, as Nomad's, keep naming what GC collected, and GC
# never rewrites live rows to drop them: allocations.preempted_allocations, previous_allocation,
# next_allocation, preempted_by_allocation, followup_eval_id and evaluations.previous_eval,
# next_eval, blocked_eval (plain columns since migration 0010_history_links). gc_runs.eval_id is
# history too (kept after GC collects the evaluation).
SOFT_REFERENCES = {
    "plans.job_id": "SELECT count(*) FROM plans c WHERE NOT EXISTS "
    "(SELECT 1 FROM jobs p WHERE p.namespace = c.namespace AND p.id = c.job_id)",
    "class_unblocks.computed_class": "SELECT count(*) FROM class_unblocks c WHERE NOT EXISTS "
    "(SELECT 1 FROM nodes n WHERE n.computed_class = c.computed_class)",
    "gc_runs.status": "SELECT count(*) FROM gc_runs g WHERE g.status = 'running' AND (g.eval_id IS NULL OR "
    "NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.id = g.eval_id AND e.status = 'pending'))",
}

FOREIGN_KEYS = """
SELECT c.conname, child.relname, parent.relname,
       array_agg(ca.attname ORDER BY k.ord), array_agg(pa.attname ORDER BY k.ord)
FROM pg_constraint c
JOIN pg_class child ON child.oid = c.conrelid
JOIN pg_class parent ON parent.oid = c.confrelid
JOIN pg_namespace n ON n.oid = child.relnamespace AND n.nspname = current_schema()
CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(child_col, parent_col, ord)
JOIN pg_attribute ca ON ca.attrelid = c.conrelid AND ca.attnum = k.child_col
JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = k.parent_col
WHERE c.contype = 'f'
GROUP BY c.conname, child.relname, parent.relname
"""


def orphans(pg: Conn) -> list[str]:
    """Names of the references with dangling rows (empty when airtight)."""
    found = []
    for name, child, parent, child_cols, parent_cols in pg.execute(FOREIGN_KEYS).fetchall():
        assert isinstance(child_cols, list) and isinstance(parent_cols, list)  # array_agg of names
        present = " AND ".join(f"c.{col} IS NOT NULL" for col in child_cols)
        match = " AND ".join(f"p.{p} = c.{c}" for c, p in zip(child_cols, parent_cols, strict=True))
        sql = f"SELECT count(*) FROM {child} c WHERE {present} AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {match})"
        if _count(pg, sql):
            found.append(str(name))
    found.extend(name for name, sql in SOFT_REFERENCES.items() if _count(pg, sql))
    return found


def _count(pg: Conn, sql: str) -> int:
    row = pg.execute(sql).fetchone()
    return int(str(row[0])) if row else 0
