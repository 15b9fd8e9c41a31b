"""Seed 002's flapping storm: 100 nodes, each running 10 system jobs and 40 service jobs, all go
down once and come back. Nomad creates ~10,000 evaluations and processes them one by one
(cancelling superseded ones later, in batches). Prints how many evaluations were created, how
many scheduling passes ran, how many were coalesced, and the time to quiet.

Usage: uv run python -m bench.storm [nodes] [workers]
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
from app.store.job.jobs import RegisterOptions, register_job
from app.store.node.node_status import set_node_status
from app.wire.job import JobSpec
from bench.common import add_nodes, bench_database

# BENCH_CORRAL: another checkout's corral (…/.venv/bin/corral) run by this checkout's benchmark,
# so two versions are measured by the same harness.
CORRAL = os.environ.get("BENCH_CORRAL") or str(Path(sys.executable).parent / "corral")
SYSTEM_JOBS, SERVICE_JOBS = 10, 40


def start(role: str, url: str, settings: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A corral role as its own process on `url`; `settings` adds CORRAL_* variables."""
    env = {
        **os.environ,
        "CORRAL_DATABASE_URL": url,
        "CORRAL_LOG_LEVEL": "warning",
        "CORRAL_POLL_INTERVAL_S": "0.1",
        **(settings or {}),
    }
    return subprocess.Popen([CORRAL, role], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def query(url: str, sql: str) -> tuple[object, ...]:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return row


# Whether anything is left to do: a pending evaluation (not a delayed follow-up) or plan. EXISTS
# stops at the first row, and the plans' partial queue index answers its half, so a poll costs
# the system under test next to nothing while it is busy.
BUSY = (
    "SELECT EXISTS (SELECT 1 FROM evaluations WHERE status = 'pending' AND triggered_by <> 'failed-follow-up') "
    "OR EXISTS (SELECT 1 FROM plans WHERE status = 'pending')"
)


def wait_quiet(url: str, limit_s: float = 900) -> float:
    """Seconds until nothing is pending, polled every 0.1 s on one connection (a new connection
    per poll, and two full counts, cost Postgres about 0.25 ms of CPU per evaluation of
    bench.small_jobs: CPU the roles being measured were charged with and could not use)."""
    began = time.monotonic()
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        while time.monotonic() - began < limit_s:
            row = conn.execute(BUSY).fetchone()
            if row is not None and not row[0]:
                return time.monotonic() - began
            time.sleep(0.1)
    raise RuntimeError("did not quiet down")


def job(job_id: str, job_type: str, count: int) -> JobSpec:
    return normalize_job(
        {
            "ID": job_id,
            "Type": job_type,
            "Datacenters": ["dc1"],
            "TaskGroups": [
                {
                    "Name": "g",
                    "Count": count,
                    "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 20, "MemoryMB": 16}}],
                }
            ],
        }
    )


def main(nodes: int, workers: int) -> None:
    with bench_database() as url:
        add_nodes(url, nodes, cpu=4000, memory_mb=16384)
        roles = [start("applier", url), start("leader", url)] + [start("worker", url) for _ in range(workers)]
        engine = make_engine(url, "cli")
        sessions = make_sessionmaker(engine)
        for i in range(SYSTEM_JOBS):
            with transaction(sessions) as session:
                register_job(session, job(f"system-{i}", "system", 1), RegisterOptions())
        for i in range(SERVICE_JOBS):
            with transaction(sessions) as session:
                register_job(session, job(f"service-{i}", "service", nodes), RegisterOptions())
        wait_quiet(url)
        placed = query(url, "SELECT count(*) FROM allocations WHERE desired_status = 'run'")[0]
        before = query(url, "SELECT count(*), max(create_index) FROM evaluations")
        node_ids = [r[0] for r in psycopg.connect(libpq_url(url)).execute("SELECT id FROM nodes ORDER BY name")]
        began = time.monotonic()
        for status in ("down", "ready"):  # the wave: every node goes down, then every node comes back
            for node_id in node_ids:
                with transaction(sessions) as session:
                    set_node_status(session, node_id, status)
        quiet_after = wait_quiet(url)
        total = time.monotonic() - began
        created, passes, coalesced = query(
            url,
            "SELECT count(*), count(*) FILTER (WHERE status IN ('complete', 'failed', 'blocked') "
            "OR (status = 'pending')), count(*) FILTER (WHERE status = 'canceled' AND status_description LIKE "
            f"'coalesced%') FROM evaluations WHERE create_index > {before[1]}",
        )
        assert isinstance(passes, int)  # a count
        for proc in roles:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        engine.dispose()
        jobs = SYSTEM_JOBS + SERVICE_JOBS
        print(
            f"{nodes} nodes x ({SYSTEM_JOBS} system + {SERVICE_JOBS} service jobs), {placed} allocations, "
            f"{workers} workers"
        )
        print(
            f"wave (all nodes down, then up): {created} evaluations created "
            f"(Nomad: {nodes * jobs * 2}), {passes} scheduling passes, {coalesced} coalesced"
        )
        print(
            f"passes per job per wave: {passes / (jobs * 2):.2f} (target ~1); "
            f"quiet {total:.1f} s after the first node went down ({quiet_after:.1f} s after the last event)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 2)
