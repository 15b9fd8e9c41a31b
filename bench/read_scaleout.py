"""Read scale-out on a hot standby (issue 22): the same read load against a `corral server` whose
reads go to the primary, then against one whose reads go to the standby
(CORRAL_READ_DATABASE_URL), in one run on one primary + synchronous standby
(bench/replication.py).

Load per phase: `--watchers` blocking queries (`GET /v1/jobs?index=<last>&wait=5s`, each
re-issued with the index of its last answer), `--readers` plain reads in a loop
(`GET /v1/job/<id>?stale`: the client accepts a standby's answer, as in Nomad) and one writer
registering a job version every 1/`--write-rate` s (on the primary in both phases: it is what
wakes the blocking queries). Prints per phase: blocking answers/s, plain reads/s, writes/s,
blocking answers per write (each write wakes every watcher: at most --watchers, fewer when one
answer covers two writes), blocking queries that ended at their wait with nothing new, transactions/s
on each database server, the load average, and any answer whose X-Nomad-Index went back for its
watcher (must be 0); then the standby/primary ratios. Both servers, both databases and the load
run on one machine: a standby there adds no CPU, so the ratios show the cost of a standby read,
and the primary's transactions/s show the load taken off it.

    uv run python -m bench.read_scaleout --seconds 20
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

from app.db.schema import upgrade
from bench.failover import Roles, job, wait
from bench.replication import DATABASE, Node, Replicated, free_port, replicated_postgres

ENV = {"CORRAL_HTTP_ACCESS_LOG": "false", "CORRAL_LOG_LEVEL": "warning"}
SEED_JOBS = 20
WAIT = "5s"


@dataclass
class Phase:
    name: str
    seconds: float
    blocking: int = 0
    reads: int = 0
    writes: int = 0
    went_back: int = 0
    timed_out: int = 0
    errors: int = 0
    primary_xacts: int = 0
    standby_xacts: int = 0
    load: float = 0.0

    def rate(self, count: int) -> float:
        return count / self.seconds


class Load:
    """The watchers, readers and writer of one phase, against one server."""

    def __init__(self, base_url: str, phase: Phase) -> None:
        self.base_url, self.phase = base_url, phase
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def count(self, field: str) -> None:
        with self.lock:
            setattr(self.phase, field, getattr(self.phase, field) + 1)

    def watcher(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as http:
            last = 1
            while not self.stop.is_set():
                try:
                    answer = http.get("/v1/jobs", params={"index": last, "wait": WAIT})
                except httpx.HTTPError:
                    self.count("errors")
                    continue
                if answer.status_code != 200:
                    self.count("errors")
                    continue
                index = int(answer.headers["X-Nomad-Index"])
                if index < last:
                    self.count("went_back")
                elif index == last:
                    self.count("timed_out")  # no change within the wait (or one missed)
                last = max(last, index)
                self.count("blocking")

    def reader(self, n: int) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as http:
            while not self.stop.is_set():
                try:
                    ok = http.get(f"/v1/job/seed-{n % SEED_JOBS}", params={"stale": ""}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.count("reads" if ok else "errors")

    def writer(self, interval: float) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as http:
            n = 0
            while not self.stop.wait(interval):
                spec = job(f"w-{n % 10}")
                spec["Job"]["Meta"] = {"n": str(n)}
                with contextlib.suppress(httpx.HTTPError):
                    if http.put("/v1/jobs", json=spec).status_code == 200:
                        self.count("writes")
                n += 1


def xacts(node: Node) -> int:
    with psycopg.connect(node.admin_url(), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (DATABASE,))
        found = row.fetchone()
    return int(found[0]) if found else 0


def run_phase(replicated: Replicated, work: Path, name: str, read_url: str | None, args: argparse.Namespace) -> Phase:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env = {**inherited, **ENV, "CORRAL_DATABASE_URL": replicated.url, "CORRAL_BIND": f"127.0.0.1:{port}"}
    if read_url:
        env["CORRAL_READ_DATABASE_URL"] = read_url
    roles = Roles()
    try:
        roles.start(["server"], env, work / f"server-{name}.log")
        with httpx.Client(base_url=base_url, timeout=5) as http:
            wait(lambda: http.get("/v1/agent/health").status_code == 200)
        phase = Phase(name, args.seconds)
        load = Load(base_url, phase)
        threads = [threading.Thread(target=load.watcher) for _ in range(args.watchers)]
        threads += [threading.Thread(target=load.reader, args=(n,)) for n in range(args.readers)]
        threads.append(threading.Thread(target=load.writer, args=(1.0 / args.write_rate,)))
        primary, [standby] = replicated.primary(), replicated.standbys()
        time.sleep(1.0)  # let the server settle
        before = xacts(primary), xacts(standby)
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        load.stop.set()
        phase.load = os.getloadavg()[0]
        time.sleep(1.5)  # statistics reach pg_stat_database within a second
        phase.primary_xacts = xacts(primary) - before[0]
        phase.standby_xacts = xacts(standby) - before[1]
        for thread in threads:
            thread.join(30)
        return phase
    finally:
        roles.close()


def report(phases: list[Phase]) -> None:
    print(
        f"{'reads on':<9} {'blocking/s':>10} {'per write':>9} {'reads/s':>8} {'writes/s':>8} {'primary tx/s':>12} "
        f"{'standby tx/s':>12} {'timed out':>9} {'went back':>9} {'errors':>6} {'load1':>5}"
    )
    for p in phases:
        print(
            f"{p.name:<9} {p.rate(p.blocking):10.1f} {p.blocking / max(1, p.writes):9.1f} "
            f"{p.rate(p.reads):8.1f} {p.rate(p.writes):8.1f} "
            f"{p.rate(p.primary_xacts):12.1f} {p.rate(p.standby_xacts):12.1f} {p.timed_out:9d} {p.went_back:9d} "
            f"{p.errors:6d} "
            f"{p.load:5.1f}"
        )
    on_primary = [p for p in phases if p.name == "primary"]
    on_standby = [p for p in phases if p.name == "standby"]

    def total(items: list[Phase], field: str) -> float:
        return sum(float(getattr(p, field)) for p in items) / max(1e-9, sum(p.seconds for p in items))

    for field, label in (("blocking", "blocking answers/s"), ("reads", "plain reads/s")):
        ratio = total(on_standby, field) / max(1e-9, total(on_primary, field))
        print(f"{label}: standby / primary = {ratio:.2f}")
    share = total(on_standby, "primary_xacts") / max(1e-9, total(on_primary, "primary_xacts"))
    print(f"primary transactions/s with reads on the standby / with reads on the primary = {share:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=1, help="primary/standby phase pairs, alternating")
    parser.add_argument("--watchers", type=int, default=32)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--write-rate", type=float, default=20.0, help="job registrations per second")
    args = parser.parse_args()
    with replicated_postgres() as replicated:
        upgrade(replicated.sqlalchemy_url)
        work = replicated.root / "roles"
        work.mkdir()
        [standby] = replicated.standbys()
        read_url = f"postgresql://postgres@{standby.address}/{DATABASE}?target_session_attrs=standby"
        seed(replicated, work)
        phases: list[Phase] = []
        for n in range(args.rounds):
            order = [("primary", None), ("standby", read_url)]
            for name, url in order if n % 2 == 0 else order[::-1]:
                phases.append(run_phase(replicated, work, name, url, args))
                print(f"round {n} {name}: done", flush=True)
        report(phases)


def seed(replicated: Replicated, work: Path) -> None:
    """The jobs the plain readers read, registered through a server of their own."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env = {**inherited, **ENV, "CORRAL_DATABASE_URL": replicated.url, "CORRAL_BIND": f"127.0.0.1:{port}"}
    roles = Roles()
    try:
        roles.start(["server"], env, work / "server-seed.log")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            wait(lambda: http.get("/v1/agent/health").status_code == 200)
            for n in range(SEED_JOBS):
                assert http.put("/v1/jobs", json=job(f"seed-{n}")).status_code == 200
    finally:
        roles.close()


if __name__ == "__main__":
    main()
