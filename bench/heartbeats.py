"""Heartbeat capacity: heartbeats/s and p99 latency through the real API (gunicorn, the
`heartbeat` endpoint: secret check, TTL formula, UNLOGGED upsert with asynchronous commit) driven
by the simulated fleet, against a ceiling measured in the same run: the same SQL statement in a
bare psycopg loop with the same concurrency. TTLs are shrunk so the fleet asks for far more than
the server can give; with Nomad's defaults a fleet sends about 50/s whatever its size.

Usage: uv run python bench/heartbeats.py [nodes] [seconds] [concurrency]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg

from app.db.engines import libpq_url
from app.store.sql import psycopg_query
from app.values.ids import secret_hash
from bench.common import bench_database
from client.fleet.base import FleetConfig
from client.fleet.fleet import Fleet

CORRAL = str(Path(sys.executable).parent / "corral")


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] if len(samples) >= 100 else max(samples, default=0.0)


def api_rate(url: str, nodes: int, seconds: float, concurrency: int) -> tuple[float, float]:
    port = 4900 + os.getpid() % 500
    env = {
        **os.environ,
        "CORRAL_DATABASE_URL": url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        # Every node asks ~10-20 times a second (the fleet-size term of the formula lifted): saturation.
        "CORRAL_HEARTBEAT_MIN_TTL_S": "0.05",
        "CORRAL_MAX_HEARTBEATS_PER_SECOND": "1000000",
        "CORRAL_LOG_LEVEL": "warning",
    }
    server = subprocess.Popen([CORRAL, "server"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/agent/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        stop = threading.Event()
        # Compact mode: a fixed request concurrency, to compare with the SQL loop at the same one.
        fleet = Fleet(FleetConfig(base, nodes, threads=concurrency, mode="compact"), stop)
        runner = threading.Thread(target=fleet.run, daemon=True)
        runner.start()
        while fleet.stats.heartbeats == 0 and runner.is_alive():
            time.sleep(0.1)
        time.sleep(1.0)  # warm up
        with fleet.lock:
            start_count, fleet.stats.latencies_s = fleet.stats.heartbeats, []
        time.sleep(seconds)
        with fleet.lock:
            done, latencies = fleet.stats.heartbeats - start_count, list(fleet.stats.latencies_s)
        stop.set()
        runner.join(timeout=10)
        return done / seconds, p99(latencies)
    finally:
        server.terminate()
        server.wait(30)


def sql_rate(url: str, seconds: float, concurrency: int) -> tuple[float, float]:
    """The ceiling: the endpoint's statement alone, on fresh nodes, no HTTP or Python web stack."""
    node_ids = [uuid.uuid4() for _ in range(concurrency)]
    with psycopg.connect(libpq_url(url)) as conn:
        for node_id in node_ids:
            conn.execute(
                "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
                "status_updated_at, scheduling_eligibility, cpu_shares, memory_mb, disk_mb, create_index, "
                "modify_index) VALUES (%s, %s, 'ceiling', 'dc1', 'default', 'c', 'ready', now(), 'eligible', "
                "1000, 1000, 1000, 1, 1)",
                (node_id, secret_hash("s")),
            )
    statement = psycopg_query("heartbeat")
    counts, latencies = [0] * concurrency, [[] for _ in range(concurrency)]  # type: list[int], list[list[float]]
    stop_at = time.monotonic() + seconds

    def loop(i: int) -> None:
        params = {
            "node_id": node_ids[i],
            "secret_hash": secret_hash("s"),
            "min_ttl_s": 0.05,
            "per_second": 50.0,
            "grace_s": 10.0,
            "async_commit": True,  # as the endpoint: synchronous_commit off within the statement
        }
        with psycopg.connect(libpq_url(url)) as conn:
            while time.monotonic() < stop_at:
                began = time.monotonic()
                with conn.transaction():
                    conn.execute(statement, params).fetchone()
                latencies[i].append(time.monotonic() - began)
                counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds, p99([x for per in latencies for x in per])


def main(nodes: int, seconds: float, concurrency: int) -> None:
    with bench_database() as url:
        api, api_p99 = api_rate(url, nodes, seconds, concurrency)
        ceiling, ceiling_p99 = sql_rate(url, seconds, concurrency)
    print(f"nodes={nodes} concurrency={concurrency} window={seconds:g}s")
    print(f"API heartbeats:  {api:8.0f}/s  p99 {api_p99 * 1000:6.1f} ms")
    print(f"bare SQL loop:   {ceiling:8.0f}/s  p99 {ceiling_p99 * 1000:6.1f} ms")
    print(f"ratio API / ceiling: {api / ceiling:.2f}; headroom over Nomad's 50/s target: {api / 50:.0f}x")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        int(args[0]) if args else 2000, float(args[1]) if len(args) > 1 else 10.0, int(args[2]) if len(args) > 2 else 8
    )
