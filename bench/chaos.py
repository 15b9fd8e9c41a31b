"""A chaos soak: the real roles as separate processes (server, workers, appliers, leaders,
clients and a simulated fleet) on an embedded PostgreSQL of its own, under a load of job
registers, updates, scales, stops and node drains, while faults land every 1-3 s: kill -9 of
any role (a supervisor restarts it), SIGSTOP for 5-15 s, pg_terminate_backend of every corral
session, and an immediate restart of PostgreSQL itself. The invariants of DESIGN.md are checked
during the run and after it settles, plus "every live node runs what is placed on it" and "no
acknowledged write lost". Prints faults by kind, acked writes, each invariant's result and the
time to settle, and ends with 'N passed, M failed' (exit status 1 if any failed).

    uv run python -m bench.chaos --duration 1800 --seed 7
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.chaos_checks import Expected, Results, check_acked, converged, safety
from bench.chaos_processes import Postgres, Role, Supervisor, free_port

NANOS = 1_000_000_000
ENV = {
    "CORRAL_HEARTBEAT_MIN_TTL_S": "3",
    "CORRAL_HEARTBEAT_GRACE_S": "3",
    "CORRAL_POLL_INTERVAL_S": "0.2",
    "CORRAL_EVAL_LEASE_S": "5",
    "CORRAL_LOG_FORMAT": "console",
    "CORRAL_HTTP_MAX_CONNS_PER_CLIENT": "0",
    # After each Postgres crash every live node without a heartbeat row (the table is UNLOGGED)
    # gets this TTL, as Nomad's new leader grants its failover TTL. A killed fleet comes back with
    # new node IDs, so its old nodes are dead but "ready" until it runs out: at the default 300 s,
    # longer than the restart rhythm, they never would, and the soak would not settle.
    "CORRAL_FAILOVER_HEARTBEAT_TTL_S": "20",
}


def job_body(job_id: str, count: int, version_tag: str) -> dict[str, Any]:
    """Every other job (by its serial) has no deployments (`MaxParallel = 0`): Nomad refuses to
    scale a job while its deployment is active, so only those are scaled in practice, and the
    others exercise deployments."""
    task = {
        "Name": "t",
        "Driver": "mock",
        "Config": {},
        "Env": {"TAG": version_tag},
        "Resources": {"CPU": 100, "MemoryMB": 32},
    }
    group: dict[str, Any] = {"Name": "g", "Count": count, "Tasks": [task], "EphemeralDisk": {"SizeMB": 10}}
    if int(job_id.rsplit("-", 1)[-1]) % 2:
        group["Update"] = {"MaxParallel": 0}
    return {"Job": {"ID": job_id, "Type": "service", "TaskGroups": [group]}}


class Chaos:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.random = random.Random(args.seed)
        self.results = Results()
        self.expected: dict[str, Expected] = {}
        self.stop = threading.Event()
        self.pg_lock = threading.Lock()  # held while Postgres restarts: checks wait
        self.pg = Postgres(work / "pg")
        ports = [free_port() for _ in range(args.servers)]
        self.bases = [f"http://127.0.0.1:{port}" for port in ports]
        self.base = self.bases[0]
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        env = {**inherited, **ENV, "CORRAL_DATABASE_URL": self.pg.url}
        self.roles: list[Role] = [
            Role(f"server-{i}", ["server"], {**env, "CORRAL_BIND": f"127.0.0.1:{port}"}, work / f"server-{i}")
            for i, port in enumerate(ports)
        ]
        for kind, n in (("worker", args.workers), ("applier", 2), ("leader", 2)):
            self.roles += [Role(f"{kind}-{i}", [kind], env, work / f"{kind}-{i}") for i in range(n)]
        for i in range(args.clients):
            flags = ["--name", f"client-{i}", "--driver", "mock", "--cpu-total-compute", "4000"]
            flags += ["--memory-total-mb", "4096", "--data-dir", str(work / f"client-{i}" / "data")]
            client_env = {**env, "CORRAL_ADDR": self.bases[i % len(self.bases)]}
            self.roles.append(Role(f"client-{i}", ["client", *flags], client_env, work / f"client-{i}"))
        if args.fleet_nodes:
            fleet = ["fleet", "--nodes", str(args.fleet_nodes), "--server", self.base, "--name-prefix", "fleet"]
            fleet += ["--data-dir", str(work / "fleet" / "data")]  # a restarted fleet takes its nodes back
            self.roles.append(Role("fleet", fleet, {**env, "CORRAL_ADDR": self.base}, work / "fleet"))
        self.https = [httpx.Client(base_url=base, timeout=10) for base in self.bases]
        self.http = self.https[0]
        self.supervisor = Supervisor(list(self.roles))

    # -- processes ---------------------------------------------------------------------------

    def wait_ready(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        nodes = self.args.clients + self.args.fleet_nodes
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                ready = self.pg.query("SELECT count(*) FROM nodes WHERE status = 'ready'")[0][0]
                if self.http.get("/v1/agent/health").status_code == 200 and ready >= nodes:
                    return
            time.sleep(0.5)
        raise SystemExit("the cluster did not come up")

    # -- faults ------------------------------------------------------------------------------

    def inject(self) -> None:
        next_pg = time.monotonic() + self.args.pg_restart_every
        while not self.stop.wait(self.random.uniform(1, 3)):
            if time.monotonic() >= next_pg:
                next_pg = time.monotonic() + self.args.pg_restart_every * self.random.uniform(0.7, 1.3)
                with self.pg_lock:
                    try:
                        self.pg.restart()
                        self.results.faults["postgres immediate restart"] += 1
                    except Exception as err:
                        print(f"postgres restart failed: {err!r}", flush=True)
                continue
            kind = self.random.choice(["kill -9", "kill -9", "SIGSTOP", "pg_terminate_backend"])
            if kind == "pg_terminate_backend":
                with contextlib.suppress(Exception):
                    self.pg.terminate_sessions()
                    self.results.faults[kind] += 1
                continue
            role = self.random.choice([r for r in self.roles if r.alive() and time.monotonic() >= r.stopped_until])
            if kind == "kill -9":
                role.kill9()
                self.results.faults[f"kill -9 {role.name.split('-')[0]}"] += 1
            else:
                pause = self.random.uniform(5, 15)
                role.stopped_until = time.monotonic() + pause
                role.signal_tree(signal.SIGSTOP)
                threading.Timer(pause, role.signal_tree, args=(signal.SIGCONT,)).start()
                self.results.faults[f"SIGSTOP {role.name.split('-')[0]}"] += 1

    # -- load --------------------------------------------------------------------------------

    def _send(self, kind: str, job_id: str | None, method: str, path: str, body: Any = None) -> dict[str, Any] | None:
        answer = None
        # Any server will do; only a refused connection (the request never arrived) moves on to
        # the next one: after a timeout the outcome is unknown and the write is not sent again.
        for http in self.random.sample(self.https, len(self.https)):
            try:
                answer = http.request(method, path, json=body)
                break
            except httpx.ConnectError:
                continue
            except httpx.HTTPError:
                break
        if answer is not None and answer.status_code == 200:
            self.results.acked[kind] += 1
            return dict(answer.json()) if answer.content else {}
        if answer is not None and answer.status_code >= 500 and answer.status_code != 503:
            self.results.violate("no 5xx other than 503", f"{method} {path}: {answer.status_code} {answer.text[:200]}")
        self.results.unacked[f"{kind} {answer.status_code if answer is not None else 'no answer'}"] += 1
        if job_id is not None and job_id in self.expected:
            self.expected[job_id].unknown = True
        return None

    def load(self) -> None:
        serial = 0
        draining: str | None = None
        while not self.stop.wait(self.random.uniform(0.1, 0.4)):
            live = [j for j, e in self.expected.items() if not e.stopped]
            roll = self.random.random()
            if roll < 0.3 or not live:
                if len(live) >= self.args.max_jobs:
                    continue
                serial += 1
                job_id, count = f"chaos-{serial:05}", self.random.randint(1, 3)
                self.expected[job_id] = Expected(unknown=True)
                got = self._send("register", job_id, "PUT", "/v1/jobs", job_body(job_id, count, "v0"))
                if got is not None:
                    self.expected[job_id] = Expected(count=count, modify_index=int(got["JobModifyIndex"]))
            elif roll < 0.5:
                job_id = self.random.choice(live)
                count = self.expected[job_id].count
                body = job_body(job_id, count, f"v{self.random.randint(1, 10**6)}")
                got = self._send("update", job_id, "PUT", f"/v1/job/{job_id}", body)
                if got is not None:
                    self.expected[job_id] = Expected(count=count, modify_index=int(got["JobModifyIndex"]))
            elif roll < 0.7:
                job_id, count = self.random.choice(live), self.random.randint(0, 4)
                body = {"Count": count, "Target": {"Group": "g"}}
                if self._send("scale", job_id, "POST", f"/v1/job/{job_id}/scale", body) is not None:
                    previous = self.expected[job_id]
                    if not previous.unknown:
                        self.expected[job_id] = Expected(count=count, modify_index=previous.modify_index)
            elif roll < 0.85:
                job_id = self.random.choice(live)
                if self._send("stop", job_id, "DELETE", f"/v1/job/{job_id}") is not None:
                    self.expected[job_id] = Expected(stopped=True)
            else:
                draining = self._drain_step(draining)
        if draining is not None:
            self._undrain(draining)

    def _drain_step(self, draining: str | None) -> str | None:
        if draining is not None:
            return None if self._undrain(draining) else draining
        with contextlib.suppress(Exception):
            nodes = self.pg.query("SELECT id FROM nodes WHERE status = 'ready' AND drain_strategy IS NULL")
            if len(nodes) > 2:
                node_id = str(self.random.choice(nodes)[0])
                body = {"DrainSpec": {"Deadline": 20 * NANOS}}
                if self._send("drain", None, "POST", f"/v1/node/{node_id}/drain", body) is not None:
                    return node_id
        return None

    def _undrain(self, node_id: str) -> bool:
        body = {"DrainSpec": None, "MarkEligible": True}
        return self._send("drain", None, "POST", f"/v1/node/{node_id}/drain", body) is not None

    # -- invariants --------------------------------------------------------------------------

    def check_during(self) -> None:
        while not self.stop.wait(2.0):
            with self.pg_lock, contextlib.suppress(psycopg.Error):
                safety(self.pg, self.results)

    # -- run ---------------------------------------------------------------------------------

    def run(self) -> int:
        for role in self.roles:
            role.start()
        started = time.monotonic()
        try:
            self.wait_ready()
            print(f"cluster up in {time.monotonic() - started:.1f}s; chaos for {self.args.duration:g}s", flush=True)
            threads = [
                threading.Thread(target=target, name=name, daemon=True)
                for name, target in (("inject", self.inject), ("load", self.load), ("check", self.check_during))
            ]
            self.supervisor.start()
            for thread in threads:
                thread.start()
            self.stop.wait(self.args.duration)
            self.stop.set()
            # From here on only this thread restarts roles: the supervisor and it must not both
            # start one (the first process would be lost, and outlive the soak).
            self.supervisor.stop()
            for thread in threads:
                thread.join(timeout=60)
            for role in self.roles:  # every frozen process thawed, every dead one back
                role.signal_tree(signal.SIGCONT)
                role.stopped_until = 0.0
                if role.reap():
                    role.start()
            return self.settle()
        finally:
            self.stop.set()
            self.supervisor.stop()  # before closing the roles: it could restart one behind close()
            for http in self.https:
                http.close()
            for role in self.roles:
                role.close()
            self.pg.close()

    def settle(self) -> int:
        began, left = time.monotonic(), ["not checked yet"]
        while time.monotonic() - began < self.args.settle_timeout:
            with contextlib.suppress(psycopg.Error):
                left = converged(self.pg, self.expected)
                if not left:
                    break
            for role in self.roles:
                if role.reap():
                    role.start()
            time.sleep(1.0)
        settle_s = time.monotonic() - began
        with contextlib.suppress(psycopg.Error):
            safety(self.pg, self.results)
            check_acked(self.pg, self.expected, self.results)
        names = [
            "no overcommit",
            "at most one evaluation in flight per job",
            "no duplicate allocation",
            "no stuck evaluation",
            "every live node runs what is placed on it",
            "jobs converge to their acknowledged state",
            "no acknowledged write lost",
            "no 5xx other than 503",
        ]
        for problem in left:
            name, _, detail = problem.partition(": ")
            self.results.violate(name if name in names else "settles", detail)
        return self.report(names, settle_s, not left)

    def report(self, names: list[str], settle_s: float, settled: bool) -> int:
        r = self.results
        print(f"\nfaults: {sum(r.faults.values())}")
        for kind, n in sorted(r.faults.items()):
            print(f"  {kind:32} {n}")
        print(f"acknowledged writes: {sum(r.acked.values())} ({dict(sorted(r.acked.items()))})")
        print(f"unacknowledged (503, timeouts, refused): {sum(r.unacked.values())} ({dict(sorted(r.unacked.items()))})")
        exits = {role.name: dict(role.exits) for role in self.roles if role.exits}
        print(f"processes that exited by themselves (restarted): {exits or 'none'}")
        verdict = f"{settle_s:.1f}s" if settled else f"did not settle within {self.args.settle_timeout:g}s"
        print(f"time to settle after the last fault: {verdict}")
        passed = failed = 0
        for name in names + [n for n in r.violations if n not in names]:
            found = r.violations.get(name, [])
            failed, passed = (failed + 1, passed) if found else (failed, passed + 1)
            print(f"  {'FAIL' if found else 'ok  '} {name}" + "".join(f"\n         {d}" for d in found))
        print(f"{passed} passed, {failed} failed", flush=True)
        return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of faults and load")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--servers", type=int, default=2, help="API servers; the load uses any that answers")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--fleet-nodes", type=int, default=5)
    parser.add_argument("--max-jobs", type=int, default=20)
    parser.add_argument("--pg-restart-every", type=float, default=60.0, help="seconds between Postgres restarts")
    parser.add_argument("--settle-timeout", type=float, default=180.0)
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs)")
    args = parser.parse_args()
    print(f"chaos soak: seed {args.seed}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="corral-chaos-"))
    work.chmod(0o755)
    try:
        code = Chaos(args, work).run()
    finally:
        if args.keep:
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
