"""A real fleet against a real cluster: for each size N of a ladder, a fresh embedded Postgres, a
`corral server` (gevent workers, default limits: 100 connections per address, 10 s header
deadline), worker, applier and leader processes, and `corral fleet --nodes N` in its realistic
mode (every node heartbeats at its TTL and holds its own blocking query on its allocations, from
source addresses 127.0.0.2… at 30 nodes each). While it runs, from this process:

- an operator load of about 50 requests/s: job and allocation reads, and one job registration a
  second (a batch job of 5 mock tasks running 10 s, placed on the fleet and run by it);
- 100 hostile connections from their own address (127.0.0.254): 50 send headers one line every
  2 s, 50 hold never-ending blocking queries; each is reopened as soon as the server drops it;
- a health probe 10 times a second, and a watch for nodes marked down (none should be: every
  node is alive).

It prints, per N: heartbeats on time (accepted within 1 s of falling due), nodes wrongly marked
down, health p50/p99 (against the same probe on the idle cluster just before the fleet starts),
job-register p99, read p99, server CPU (% of one core, master + API workers) and RSS, and the
fleet's own CPU; then the largest N that held (no node marked down, health p99 < 100 ms, every
heartbeat on time), against the target: 5,000 nodes (Nomad's C1M host count).

Heartbeat TTLs follow Nomad's rate-based formula (max_heartbeats_per_second 50): TTL ≈ N/50 s,
so a fleet of any size sends about 50 heartbeats/s, and a window shorter than the TTL sees each
node beat about once.

Usage: uv run python -m bench.fleet [--ladder 1000,2500,5000] [--seconds 120]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from app.db.engines import libpq_url
from bench.common import bench_database

CORRAL = str(Path(sys.executable).parent / "corral")
HOSTILE_ADDRESS = "127.0.0.254"
TARGET_NODES = 5000
HEALTH_P99_LIMIT_S = 0.100


def quantile(samples: list[float], q: int) -> float:
    if len(samples) < 2:
        return max(samples, default=0.0)
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Samples:
    lock: threading.Lock = field(default_factory=threading.Lock)
    values: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.values.setdefault(kind, []).append(seconds)

    def fail(self, kind: str) -> None:
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def get(self, kind: str) -> list[float]:
        with self.lock:
            return list(self.values.get(kind, []))


@contextlib.contextmanager
def cluster(url: str, workdir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {
        **os.environ,
        "CORRAL_DATABASE_URL": url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_LOG_LEVEL": "warning",
        "CORRAL_HTTP_ACCESS_LOG": "false",
    }
    procs = {}
    try:
        for role in ("server", "worker", "applier", "leader"):
            log = (workdir / f"{role}.log").open("wb")
            procs[role] = subprocess.Popen([CORRAL, role], env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/v1/agent/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("the server did not become healthy")
        yield base, procs["server"]
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def rss_mb(pid: int) -> float:
    total = 0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total / 2**20


def probe_health(base: str, samples: Samples, kind: str, stop: threading.Event) -> None:
    with httpx.Client(base_url=base, timeout=10) as http:
        while not stop.wait(0.1):
            began = time.monotonic()
            try:
                ok = http.get("/v1/agent/health").status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                samples.add(kind, time.monotonic() - began)
            else:
                samples.fail(kind)


def batch_job(job_id: str) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Config": {"run_for": "10s"}, "Resources": {"CPU": 10, "MemoryMB": 10}}
    group = {"Name": "g", "Count": 5, "Tasks": [task], "EphemeralDisk": {"SizeMB": 10}}
    return {"ID": job_id, "Type": "batch", "TaskGroups": [group]}


def operator_load(base: str, samples: Samples, stop: threading.Event, rate: float, prefix: str) -> None:
    """About `rate` requests/s: one job registration a second, the rest job and allocation reads."""
    rng = random.Random(1)
    jobs: list[str] = []
    allocs: list[str] = []
    interval = 1.0 / rate
    next_at = time.monotonic()
    registered = 0
    with httpx.Client(base_url=base, timeout=30) as http:

        def timed(kind: str, method: str, path: str, body: Any = None) -> httpx.Response | None:
            began = time.monotonic()
            try:
                reply = http.request(method, path, json=body)
            except httpx.HTTPError:
                samples.fail(kind)
                return None
            if reply.status_code >= 400:
                samples.fail(kind)
                return None
            samples.add(kind, time.monotonic() - began)
            return reply

        for i in range(10**9):
            next_at += interval
            if stop.wait(max(0.0, next_at - time.monotonic())):
                return
            if i % max(1, round(rate)) == 0:
                job_id = f"{prefix}-{registered}"
                registered += 1
                if timed("register", "PUT", "/v1/jobs", {"Job": batch_job(job_id)}):
                    jobs.append(job_id)
                continue
            choice = i % 5
            if choice == 0 or not jobs:
                timed("read", "GET", "/v1/jobs")
            elif choice == 1:
                timed("read", "GET", f"/v1/job/{rng.choice(jobs)}")
            elif choice == 2:
                reply = timed("read", "GET", f"/v1/job/{rng.choice(jobs)}/allocations")
                if reply is not None:
                    allocs = [a["ID"] for a in reply.json()][-50:] or allocs
            elif choice == 3 and allocs:
                timed("read", "GET", f"/v1/allocation/{rng.choice(allocs)}")
            else:
                timed("read", "GET", f"/v1/job/{rng.choice(jobs)}/summary")


class Hostile:
    """Connections that try to hold the API: slow headers and never-ending blocking queries,
    reopened whenever the server drops them."""

    def __init__(self, port: int, slow: int, blocking: int) -> None:
        self.port, self.slow_count, self.blocking_count = port, slow, blocking
        self.slow: list[socket.socket | None] = [None] * slow
        self.blocking: list[socket.socket | None] = [None] * blocking
        self.reopened = 0
        self.refused = 0

    def _open(self, first: bytes) -> socket.socket | None:
        try:
            sock = socket.socket()
            sock.bind((HOSTILE_ADDRESS, 0))
            sock.settimeout(5)
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(first)
            sock.setblocking(False)
            return sock
        except OSError:
            self.refused += 1
            return None

    @staticmethod
    def _dropped(sock: socket.socket) -> bool:
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable)  # an answer (429, timeout) or a close: either way it is over
        except (OSError, ValueError):
            return True

    def run(self, stop: threading.Event) -> None:
        waiting = f"GET /v1/jobs?index={10**12}&wait=300s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        try:
            while not stop.wait(1.0):
                for i, sock in enumerate(self.blocking):
                    if sock is None or self._dropped(sock):
                        if sock is not None:
                            sock.close()
                            self.reopened += 1
                        self.blocking[i] = self._open(waiting)
                for i, sock in enumerate(self.slow):
                    if sock is not None and not self._dropped(sock) and (time.monotonic() + i) % 2 < 1:
                        with contextlib.suppress(OSError):
                            sock.sendall(b"X-Slow: 1\r\n")
                        continue
                    if sock is not None and self._dropped(sock):
                        sock.close()
                        self.reopened += 1
                        sock = None
                    if sock is None:
                        self.slow[i] = self._open(b"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        finally:
            for sock in self.slow + self.blocking:
                if sock is not None:
                    sock.close()


def fleet_stats(path: Path) -> dict[str, Any]:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    except (OSError, ValueError):
        return {}


class RampTimeout(RuntimeError):
    """The fleet did not come up (every node ready) in time."""


@dataclass
class StepResult:
    nodes: int
    load: tuple[float, float]  # the machine's 1-minute load average at the start and end of the window
    ramp_s: float
    on_time_pct: float
    heartbeats_per_s: float
    down: int
    health_idle: tuple[float, float]
    health: tuple[float, float]
    health_failures: int
    register_p99: float
    read_p99: float
    operator_failures: int
    server_cpu_pct: float
    server_rss_mb: float
    fleet_cpu_pct: float
    hostile_reopened: int

    @property
    def held(self) -> bool:
        return (
            self.down == 0
            and self.health_failures == 0
            and self.health[1] < HEALTH_P99_LIMIT_S
            and self.on_time_pct >= 99.0
        )


def step(nodes: int, seconds: float, read_rate: float, ramp_limit_s: float) -> StepResult:
    with bench_database() as url, tempfile.TemporaryDirectory(prefix="corral-bench-fleet-") as tmp:
        work = Path(tmp)
        with cluster(url, work) as (base, server):
            port = int(base.rsplit(":", 1)[1])
            samples = Samples()
            stop_idle = threading.Event()
            idle = threading.Thread(target=probe_health, args=(base, samples, "idle", stop_idle))
            idle.start()
            time.sleep(10)
            stop_idle.set()
            idle.join()

            stats_path = work / "fleet-stats.json"
            env = {**os.environ, "CORRAL_ADDR": base, "CORRAL_LOG_LEVEL": "warning"}
            fleet_log = (work / "fleet.log").open("wb")
            fleet = subprocess.Popen(
                [CORRAL, "fleet", "--nodes", str(nodes), "--name-prefix", "fleet", "--stats-file", str(stats_path)],
                env=env,
                stdout=fleet_log,
                stderr=subprocess.STDOUT,
            )
            stop = threading.Event()
            down: set[str] = set()

            def watch_down() -> None:
                with psycopg.connect(libpq_url(url), autocommit=True) as conn:
                    while not stop.wait(1.0):
                        rows = conn.execute("SELECT id FROM nodes WHERE status = 'down'").fetchall()
                        down.update(str(row[0]) for row in rows)

            watcher = threading.Thread(target=watch_down)
            watcher.start()
            try:
                began = time.monotonic()
                with psycopg.connect(libpq_url(url), autocommit=True) as conn:
                    ready = 0
                    while time.monotonic() - began < ramp_limit_s:
                        row = conn.execute("SELECT count(*) FROM nodes WHERE status = 'ready'").fetchone()
                        ready = int(row[0]) if row is not None else 0
                        if ready >= nodes:
                            break
                        if fleet.poll() is not None:
                            raise RuntimeError(f"the fleet exited: {(work / 'fleet.log').read_text()[-2000:]}")
                        time.sleep(0.5)
                    else:
                        stats = fleet_stats(stats_path)
                        raise RampTimeout(
                            f"N={nodes}: only {ready} nodes ready after {ramp_limit_s:.0f} s "
                            f"(load average {os.getloadavg()[0]:.1f}); fleet: {json.dumps(stats)}"
                        )
                ramp = time.monotonic() - began
                time.sleep(3)  # the stats file is rewritten every 2 s

                hostile = Hostile(port, 50, 50)
                threads = [
                    threading.Thread(target=probe_health, args=(base, samples, "health", stop)),
                    threading.Thread(target=operator_load, args=(base, samples, stop, read_rate, f"op{nodes}")),
                    threading.Thread(target=hostile.run, args=(stop,)),
                ]
                before = fleet_stats(stats_path)
                load_before = os.getloadavg()[0]
                cpu_before, fleet_before = cpu_seconds(server.pid), cpu_seconds(fleet.pid)
                window_began = time.monotonic()
                for thread in threads:
                    thread.start()
                time.sleep(seconds)
                elapsed = time.monotonic() - window_began
                cpu_after, fleet_after = cpu_seconds(server.pid), cpu_seconds(fleet.pid)
                rss = rss_mb(server.pid)
                load_after = os.getloadavg()[0]
                time.sleep(2.5)
                after = fleet_stats(stats_path)
            finally:
                stop.set()
                fleet.send_signal(signal.SIGTERM)
                try:
                    fleet.wait(60)
                except subprocess.TimeoutExpired:
                    fleet.kill()
                    fleet.wait()
                watcher.join()
            for thread in threads:
                thread.join()

    def delta(key: str) -> int:
        return int(after.get(key, 0)) - int(before.get(key, 0))

    tried = delta("on_time") + delta("late") + delta("failures")
    health = samples.get("health")
    return StepResult(
        nodes=nodes,
        load=(load_before, load_after),
        ramp_s=ramp,
        on_time_pct=100.0 * delta("on_time") / tried if tried else 0.0,
        heartbeats_per_s=delta("heartbeats") / elapsed,
        down=len(down),
        health_idle=(quantile(samples.get("idle"), 50), quantile(samples.get("idle"), 99)),
        health=(quantile(health, 50), quantile(health, 99)),
        health_failures=samples.errors.get("health", 0),
        register_p99=quantile(samples.get("register"), 99),
        read_p99=quantile(samples.get("read"), 99),
        operator_failures=samples.errors.get("register", 0) + samples.errors.get("read", 0),
        server_cpu_pct=100.0 * (cpu_after - cpu_before) / elapsed,
        server_rss_mb=rss,
        fleet_cpu_pct=100.0 * (fleet_after - fleet_before) / elapsed,
        hostile_reopened=hostile.reopened,
    )


def report(result: StepResult) -> None:
    ms = 1000.0
    print(
        f"N={result.nodes:5d}  up in {result.ramp_s:5.1f} s  heartbeats on time {result.on_time_pct:5.1f} % "
        f"({result.heartbeats_per_s:4.1f}/s)  wrongly down {result.down}  "
        f"health p50/p99 {result.health[0] * ms:.1f}/{result.health[1] * ms:.1f} ms "
        f"(idle {result.health_idle[0] * ms:.1f}/{result.health_idle[1] * ms:.1f}; "
        f"ratio p99 {result.health[1] / max(result.health_idle[1], 1e-6):.1f}x; failures {result.health_failures})  "
        f"register p99 {result.register_p99 * ms:.0f} ms  read p99 {result.read_p99 * ms:.0f} ms "
        f"(failed {result.operator_failures})  "
        f"server CPU {result.server_cpu_pct:.0f} % RSS {result.server_rss_mb:.0f} MB  "
        f"fleet CPU {result.fleet_cpu_pct:.0f} %  hostile reopened {result.hostile_reopened}  "
        f"load average {result.load[0]:.1f}-{result.load[1]:.1f}  {'HELD' if result.held else 'did not hold'}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ladder", default="1000,2500,5000", help="fleet sizes to try, in order")
    parser.add_argument("--seconds", type=float, default=120.0, help="measured window per size")
    parser.add_argument("--read-rate", type=float, default=50.0, help="operator requests per second")
    parser.add_argument("--ramp-limit", type=float, default=900.0, help="seconds for every node to be ready")
    args = parser.parse_args()
    ladder = [int(n) for n in args.ladder.split(",") if n.strip()]
    held = 0
    for nodes in ladder:
        try:
            result = step(nodes, args.seconds, args.read_rate, args.ramp_limit)
        except RampTimeout as err:
            print(f"did not come up: {err}", flush=True)
            break
        report(result)
        if result.held:
            held = max(held, nodes)
    print(
        f"largest fleet that held: {held} nodes; target {TARGET_NODES} (ratio {held / TARGET_NODES:.2f}), "
        f"criteria: 0 nodes down, health p99 < {HEALTH_P99_LIMIT_S * 1000:.0f} ms, >= 99 % heartbeats on time"
    )


if __name__ == "__main__":
    main()
