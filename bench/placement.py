"""Placement throughput: one batch job of count 50,000 on 5,000 simulated nodes, from
submission to the last allocation committed, through real `corral worker` and `corral applier`
processes. Compared with Nomad's C1M rate (3,750 placements/s).

Usage: uv run python -m bench.placement [count] [nodes]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.store.jobs import RegisterOptions, register_job
from bench.common import add_nodes, bench_database

C1M_RATE = 3750.0
CORRAL = str(Path(sys.executable).parent / "corral")


def start(role: str, url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CORRAL_DATABASE_URL": url, "CORRAL_LOG_LEVEL": "warning", "CORRAL_POLL_INTERVAL_S": "0.1"}
    return subprocess.Popen([CORRAL, role], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def placed(url: str) -> int:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT count(*) FROM allocations WHERE desired_status = 'run'").fetchone()
    return int(row[0]) if row else 0


def main(count: int, nodes: int) -> None:
    with bench_database() as url:
        add_nodes(url, nodes, cpu=4000, memory_mb=16384)
        roles = [start("applier", url), start("worker", url)]
        time.sleep(3)  # let both roles connect and elect before the clock starts
        spec = normalize_job(
            {
                "ID": "c1m",
                "Type": "batch",
                "Datacenters": ["dc1"],
                "TaskGroups": [
                    {
                        "Name": "g",
                        "Count": count,
                        "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 100, "MemoryMB": 64}}],
                    }
                ],
            }
        )
        engine = make_engine(url, "cli")
        began = time.monotonic()
        with transaction(make_sessionmaker(engine)) as session:
            register_job(session, spec, RegisterOptions())
        while (done := placed(url)) < count and time.monotonic() - began < 600:
            time.sleep(0.05)
        elapsed = time.monotonic() - began
        for proc in roles:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        engine.dispose()
        rate = done / elapsed
        print(
            f"placed {done:,} of {count:,} on {nodes:,} nodes in {elapsed:.2f} s: {rate:,.0f} placements/s; "
            f"ratio to Nomad C1M ({C1M_RATE:,.0f}/s) = {rate / C1M_RATE:.2f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5_000)
