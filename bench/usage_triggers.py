"""What a big plan's write costs inside Postgres, trigger by trigger: `count` allocations on
`nodes` nodes in one INSERT (as the applier's COPY is one statement), under EXPLAIN ANALYZE,
with the current usage triggers (v3: revision 0021, sql/functions/allocation_usage_v3.sql) and,
in alternating rounds on the same database, with the v1 and v2 functions they replaced
(re-pointed inside the round's transaction). Every round is rolled back, so each starts from
the same state. Prints the median time of each trigger and of the whole statement per version,
and the ratios v3 / v1 and v3 / v2.

Usage: uv run python -m bench.usage_triggers [allocations] [nodes] [rounds]
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict

import psycopg

from app.db.engines import libpq_url
from bench.common import add_nodes, bench_database, register_mock_job

Conn = psycopg.Connection[tuple[object, ...]]
# `count` / `nodes` allocations on every node, as a batch job's spread plan puts them.
INSERT = (
    "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, name, "
    "desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, allocated_resources, task_states, "
    "create_index, modify_index, alloc_modify_index) "
    "SELECT gen_random_uuid(), 'default', 'bench', 0, %(eval)s, n.id, n.name, 'g', 'bench.g[' || r || ']', 'run', "
    "'pending', 100, 64, 64, 10, '{}', '{}', %(index)s, %(index)s, %(index)s "
    "FROM generate_series(1, %(per_node)s) r CROSS JOIN nodes n"
)
CURRENT, EARLIER = "v3", ("v1", "v2")
REPOINT = (
    "CREATE OR REPLACE TRIGGER allocations_usage_insert AFTER INSERT ON allocations "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_insert_{version}()"
)
TRIGGER_TIME = re.compile(r"^Trigger (?:for constraint )?(\S+): time=([\d.]+)")
TOTAL_TIME = re.compile(r"^Execution Time: ([\d.]+) ms")


def one_round(conn: Conn, eval_id: str, count: int, nodes: int, version: str) -> dict[str, float]:
    """Milliseconds per trigger (foreign keys folded into one) and for the whole statement."""
    times: dict[str, float] = defaultdict(float)
    with conn.transaction(force_rollback=True):
        if version != CURRENT:
            conn.execute(REPOINT.format(version=version))
        index = conn.execute("SELECT state_index_own()").fetchone()
        assert index is not None
        params = {"eval": eval_id, "index": int(str(index[0])), "per_node": count // nodes}
        for (line,) in conn.execute("EXPLAIN (ANALYZE) " + INSERT, params):
            text = str(line).strip()
            if match := TRIGGER_TIME.match(text):
                name = "foreign keys" if match[1].startswith("fk_") else match[1]
                times[name] += float(match[2])
            elif match := TOTAL_TIME.match(text):
                times["whole statement"] = float(match[1])
    return times


def main(count: int, nodes: int, rounds: int) -> None:
    with bench_database() as url:
        add_nodes(url, nodes, cpu=10**6, memory_mb=10**7)
        eval_id = register_mock_job(url)
        versions = (*EARLIER, CURRENT)
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in versions}
        with psycopg.connect(libpq_url(url)) as conn:
            one_round(conn, eval_id, count, nodes, CURRENT)  # warm-up
            for _ in range(rounds):
                for version in versions:
                    runs[version].append(one_round(conn, eval_id, count, nodes, version))
    print(f"one INSERT of {count:,} allocations on {nodes:,} nodes, EXPLAIN ANALYZE, median of {rounds} rounds (ms)")
    ratios = [f"{CURRENT}/{v}" for v in EARLIER]
    print(f"{'':<26} " + " ".join(f"{v:>9}" for v in versions) + "  " + " ".join(f"{r:>6}" for r in ratios))
    for name in sorted(runs[CURRENT][0], key=lambda n: -statistics.median(r[n] for r in runs[CURRENT])):
        median = {v: statistics.median(r.get(name, 0.0) for r in runs[v]) for v in versions}
        cells = " ".join(f"{median[v]:>9,.1f}" for v in versions)
        shares = " ".join(f"{median[CURRENT] / median[v] if median[v] else float('nan'):>6.2f}" for v in EARLIER)
        print(f"{name:<26} {cells}  {shares}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    main(*(args + [50_000, 5_000, 3][len(args) :]))
