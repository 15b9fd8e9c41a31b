"""What the event stream's triggers cost the hot path: allocations written in bulk (one
multi-row INSERT, as the applier's COPY is one statement) and then updated row by row with a
new modify_index (as client status updates are), with the events triggers enabled and
disabled, alternating rounds on the same database. Prints the median of each and their ratio.

Each allocation carries placement metrics of a real one's size (about 550 bytes of JSON text in
allocations.placement_metrics), and the allocations' triggers run in both versions: version 1
copied them into every event's snapshot, version 2 (revision 0040, the current) leaves them out
and the stream reads them from the allocation.

Usage: uv run python -m bench.event_triggers [allocations per round] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time

import psycopg
from psycopg import sql

from app.db.engines import libpq_url
from bench.common import add_nodes, bench_database, register_mock_job

INSERT = (
    "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, name, "
    "desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, allocated_resources, task_states, "
    "create_index, modify_index, alloc_modify_index, placement_metrics) "
    "SELECT gen_random_uuid(), 'default', 'bench', 0, %(eval)s, n.id, n.name, 'g', 'bench.g[' || i || ']', 'run', "
    '\'pending\', 1, 1, 1, 1, \'{"Tasks": {"t": {"Cpu": {"CpuShares": 1}, "Memory": {"MemoryMB": 1}}}}\', '
    "'{}', %(index)s, %(index)s, %(index)s, %(metrics)s "
    "FROM generate_series(1, %(count)s) i JOIN LATERAL (SELECT id, name FROM nodes ORDER BY id "
    "OFFSET (i %% %(nodes)s) LIMIT 1) n ON true"
)
UPDATE = (
    'UPDATE allocations SET client_status = \'running\', task_states = \'{"t": {"State": "running"}}\', '
    "modify_index = %(index)s WHERE id = %(id)s"
)
NODES = 200
# A placement's metrics as allocations.placement_metrics holds them (app.wire.plan.PlacedMetricsJson):
# the counts, then the top five nodes with each scorer's part.
_SCORE = (
    '{"NodeID":"6f1c2a8e-3b4d-4e5f-8a9b-0c1d2e3f4a5b","Scores":{"binpack":0.61234,"job-anti-affinity":0,'
    '"node-reschedule-penalty":0,"node-affinity":0},"NormScore":0.61234}'
)
METRICS = (
    '{"Evaluated":5000,"Filtered":0,"InPool":5000,"Available":{"dc1":5000},"ClassFiltered":{},'
    '"ConstraintFiltered":{},"Exhausted":0,"ClassExhausted":{},"DimensionExhausted":{},"QuotaExhausted":[],'
    '"Scores":[' + ",".join([_SCORE] * 5) + '],"AllocationTime":41233,"CoalescedFailures":0}'
)
VARIANTS = ("off", "v1", "v2")  # no events triggers; the allocations' version 1; version 2 (current)


def use_variant(conn: psycopg.Connection[tuple[object, ...]], variant: str) -> None:
    if variant != "off":
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER events_insert AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows "
                "FOR EACH STATEMENT EXECUTE FUNCTION {insert}()"
            ).format(insert=sql.Identifier(f"corral_event_allocation_insert_{variant}"))
        )
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER events_update AFTER UPDATE ON allocations FOR EACH ROW "
                "WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index OR OLD.xmin = NEW.xmin) "
                "EXECUTE FUNCTION {update}()"
            ).format(update=sql.Identifier(f"corral_event_allocation_update_{variant}"))
        )
    state = sql.SQL("DISABLE" if variant == "off" else "ENABLE")
    conn.execute(
        sql.SQL("ALTER TABLE allocations {state} TRIGGER events_insert, {state} TRIGGER events_update").format(
            state=state
        )
    )
    conn.commit()


def one_round(
    conn: psycopg.Connection[tuple[object, ...]], eval_id: str, count: int, variant: str
) -> tuple[float, float]:
    use_variant(conn, variant)
    row = conn.execute("SELECT state_index_own()").fetchone()  # this transaction's index, as a writer's
    assert row is not None
    index = int(str(row[0]))
    began = time.perf_counter()
    conn.execute(INSERT, {"eval": eval_id, "index": index, "count": count, "nodes": NODES, "metrics": METRICS})
    conn.commit()
    inserted = time.perf_counter() - began
    ids = [row[0] for row in conn.execute("SELECT id FROM allocations")]
    began = time.perf_counter()
    with conn.cursor() as cur:
        cur.executemany(UPDATE, [{"index": index + 1, "id": i} for i in ids])
    conn.commit()
    updated = time.perf_counter() - began
    conn.execute("DELETE FROM allocations")
    conn.execute("DELETE FROM events")
    conn.commit()
    return inserted, updated


def main(count: int, rounds: int) -> None:
    with bench_database() as url:
        add_nodes(url, NODES, cpu=10**6, memory_mb=10**7)
        eval_id = register_mock_job(url)
        results: dict[str, list[tuple[float, float]]] = {variant: [] for variant in VARIANTS}
        with psycopg.connect(libpq_url(url)) as conn:
            one_round(conn, eval_id, count, "v2")  # warm-up
            for _ in range(rounds):
                for variant in VARIANTS:
                    results[variant].append(one_round(conn, eval_id, count, variant))
            use_variant(conn, "v2")
        for label, pick in (("bulk insert", 0), ("row updates", 1)):
            off, v1, v2 = (statistics.median(r[pick] for r in results[variant]) for variant in VARIANTS)
            print(
                f"{label} of {count:,} allocations with placement metrics: without event triggers "
                f"{off * 1000:,.0f} ms, version 1 {v1 * 1000:,.0f} ms, version 2 {v2 * 1000:,.0f} ms "
                f"(median of {rounds}); ratio to none: v1 {v1 / off:.2f}, v2 {v2 / off:.2f}; v2 / v1 {v2 / v1:.2f}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
