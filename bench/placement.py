"""Placement throughput: one batch job of count 50,000 on 5,000 simulated nodes, from
submission to its evaluation's completion (the last allocation's commit, or one round trip
after it), through real `corral worker` and `corral applier` processes. Each round runs once
per plan chunk size in BENCH_PLAN_CHUNKS (default "5000,0": the plan streamed in chunks of
5,000 placements, the default, then sent whole), and once per placement-metrics setting in
BENCH_PLACEMENT_METRICS (default "on,off": each allocation carries its placement metrics,
CORRAL_PLACEMENT_METRICS=true, then false, the default), alternating on fresh databases; the medians are
compared with each other, with Nomad's C1M rate (3,750 placements/s), with issue 21's target
(5,662/s), and metrics on with metrics off (issue 40: at least 0.95). On a shared machine the wall
time moves with other load, so each run also measures the CPU seconds its worker, applier and
Postgres spent from the submission to the settling (placements per CPU second is compared too).

Usage: uv run python -m bench.placement [count] [nodes] [rounds]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.store.job.jobs import RegisterOptions, register_job
from bench.common import add_nodes, bench_database
from bench.cpu import PostgresCpu, process_cpu

C1M_RATE = 3750.0
TARGET_RATE = 5662.0  # issue 21: what this benchmark measured before the event triggers and group commit
CORRAL = str(Path(sys.executable).parent / "corral")


def start(role: str, url: str, chunk: int, metrics: bool = True) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CORRAL_DATABASE_URL": url,
        "CORRAL_LOG_LEVEL": "warning",
        "CORRAL_POLL_INTERVAL_S": "0.1",
        "CORRAL_PLAN_CHUNK_PLACEMENTS": str(chunk),
        "CORRAL_PLACEMENT_METRICS": "true" if metrics else "false",
    }
    return subprocess.Popen([CORRAL, role], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def placed(url: str) -> int:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT count(*) FROM allocations WHERE desired_status = 'run'").fetchone()
    return int(row[0]) if row else 0


def settled(conn: psycopg.Connection[tuple[object, ...]], eval_id: str) -> bool:
    """Whether the job's evaluation is done: a primary-key probe. The applier completes it in the
    commit of its only plan, and the worker right after the last chunk's verdict, so this is the
    last allocation's commit, or a round trip after it. Counting the allocations instead, every
    50 ms, cost Postgres about 4 ms a probe at 50,000 rows: CPU taken from the run it measured."""
    row = conn.execute("SELECT status <> 'pending' FROM evaluations WHERE id = %s", (eval_id,)).fetchone()
    return bool(row and row[0])


def label(chunk: int, metrics: bool) -> str:
    return f"plan chunks of {chunk or 'all'}, metrics {'on' if metrics else 'off'}"


def one_run(count: int, nodes: int, chunk: int, metrics: bool = True) -> tuple[float, float]:
    """Placements per second and per CPU second (worker, applier, Postgres) of one run on a fresh database."""
    with bench_database() as url:
        add_nodes(url, nodes, cpu=4000, memory_mb=16384)
        roles = [start("applier", url, chunk, metrics), start("worker", url, chunk, metrics)]
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
        postgres = PostgresCpu(url)
        cpu_before = {"worker": process_cpu([roles[1].pid]), "applier": process_cpu([roles[0].pid])}
        cpu_before["postgres"] = postgres.seconds()
        began = time.monotonic()
        with transaction(make_sessionmaker(engine)) as session:
            eval_id = str(register_job(session, spec, RegisterOptions()).eval_id)
        with psycopg.connect(libpq_url(url), autocommit=True) as conn:
            while not settled(conn, eval_id) and time.monotonic() - began < 600:
                time.sleep(0.01)
        elapsed = time.monotonic() - began
        cpu = {"worker": process_cpu([roles[1].pid]), "applier": process_cpu([roles[0].pid])}
        cpu["postgres"] = postgres.seconds()
        spent = {role: cpu[role] - cpu_before[role] for role in cpu}
        done = placed(url)
        for proc in roles:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        engine.dispose()
        rate = done / elapsed
        cpu_rate = done / sum(spent.values())
        roles_text = ", ".join(f"{role} {seconds:.2f}" for role, seconds in spent.items())
        print(
            f"{label(chunk, metrics)}: placed {done:,} of {count:,} on {nodes:,} nodes in {elapsed:.2f} s: "
            f"{rate:,.0f} placements/s; CPU s {roles_text}: {cpu_rate:,.0f} placements per CPU s; "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        return rate, cpu_rate


def main(count: int, nodes: int, rounds: int, chunks: list[int], metrics: list[bool]) -> None:
    variants = [(chunk, on) for chunk in chunks for on in metrics]
    rates: dict[tuple[int, bool], list[float]] = {variant: [] for variant in variants}
    cpu_rates: dict[tuple[int, bool], list[float]] = {variant: [] for variant in variants}
    for _ in range(rounds):
        for chunk, on in variants:
            rate, cpu_rate = one_run(count, nodes, chunk, on)
            rates[chunk, on].append(rate)
            cpu_rates[chunk, on].append(cpu_rate)
    first = statistics.median(rates[variants[0]])
    medians = {variant: statistics.median(runs) for variant, runs in rates.items()}
    for (chunk, on), median in medians.items():
        print(
            f"{label(chunk, on)}: median {median:,.0f} placements/s of {rounds} run(s); "
            f"ratio to Nomad C1M ({C1M_RATE:,.0f}/s) = {median / C1M_RATE:.2f}, "
            f"to issue 21's target ({TARGET_RATE:,.0f}/s) = {median / TARGET_RATE:.2f}, "
            f"to {label(*variants[0])} = {median / first:.2f}"
        )
    for chunk in chunks:
        if (chunk, True) in medians and (chunk, False) in medians:
            ratio = medians[chunk, True] / medians[chunk, False]
            print(f"plan chunks of {chunk or 'all'}: metrics on / off = {ratio:.3f} (issue 40: at least 0.95)")
            on_cpu, off_cpu = (statistics.median(cpu_rates[chunk, on]) for on in (True, False))
            per_cpu = on_cpu / off_cpu
            print(f"plan chunks of {chunk or 'all'}: placements per CPU second, metrics on / off = {per_cpu:.3f}")


def metrics_settings(text: str) -> list[bool]:
    return [{"on": True, "off": False}[word.strip()] for word in text.split(",")]


if __name__ == "__main__":
    count, nodes, rounds = [int(a) for a in sys.argv[1:4]] + [50_000, 5_000, 1][len(sys.argv[1:4]) :]
    chunks = [int(c) for c in os.environ.get("BENCH_PLAN_CHUNKS", "5000,0").split(",")]
    main(count, nodes, rounds, chunks, metrics_settings(os.environ.get("BENCH_PLACEMENT_METRICS", "on,off")))
