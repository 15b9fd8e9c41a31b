"""What the event stream's triggers cost the hot path: allocations written in bulk (one
multi-row INSERT, as the applier's COPY is one statement) and then updated row by row with a
new modify_index (as client status updates are), with the events triggers enabled and
disabled, alternating rounds on the same database. Prints the median of each and their ratio.

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
    "create_index, modify_index, alloc_modify_index) "
    "SELECT gen_random_uuid(), 'default', 'bench', 0, %(eval)s, n.id, n.name, 'g', 'bench.g[' || i || ']', 'run', "
    '\'pending\', 1, 1, 1, 1, \'{"Tasks": {"t": {"Cpu": {"CpuShares": 1}, "Memory": {"MemoryMB": 1}}}}\', '
    "'{}', %(index)s, %(index)s, %(index)s "
    "FROM generate_series(1, %(count)s) i JOIN LATERAL (SELECT id, name FROM nodes ORDER BY id "
    "OFFSET (i %% %(nodes)s) LIMIT 1) n ON true"
)
UPDATE = (
    'UPDATE allocations SET client_status = \'running\', task_states = \'{"t": {"State": "running"}}\', '
    "modify_index = %(index)s WHERE id = %(id)s"
)
NODES = 200


def one_round(
    conn: psycopg.Connection[tuple[object, ...]], eval_id: str, count: int, triggers: bool
) -> tuple[float, float]:
    state = "ENABLE" if triggers else "DISABLE"
    conn.execute(
        sql.SQL("ALTER TABLE allocations {state} TRIGGER events_insert, {state} TRIGGER events_update").format(
            state=sql.SQL(state)
        )
    )
    conn.commit()
    row = conn.execute("SELECT state_index_own()").fetchone()  # this transaction's index, as a writer's
    assert row is not None
    index = int(str(row[0]))
    began = time.perf_counter()
    conn.execute(INSERT, {"eval": eval_id, "index": index, "count": count, "nodes": NODES})
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
        results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        with psycopg.connect(libpq_url(url)) as conn:
            one_round(conn, eval_id, count, True)  # warm-up
            for _ in range(rounds):
                for triggers in (False, True):
                    results[triggers].append(one_round(conn, eval_id, count, triggers))
        for label, pick in (("bulk insert", 0), ("row updates", 1)):
            off = statistics.median(r[pick] for r in results[False])
            on = statistics.median(r[pick] for r in results[True])
            print(
                f"{label} of {count:,} allocations: without event triggers {off * 1000:,.0f} ms, "
                f"with {on * 1000:,.0f} ms (median of {rounds}); ratio {on / off:.2f}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
