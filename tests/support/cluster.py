"""A whole cluster as real processes on one test database: API, worker, applier, leader, and
as many `corral client` processes as a test asks for, with short heartbeat TTLs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

from app.db.engines import libpq_url
from tests.support.processes import Corral, CorralFactory, free_port, wait_for, wait_healthy

# Short enough that a killed client's node goes down within seconds, long enough that a
# client on a busy test machine does not miss one.
FAST = {
    "CORRAL_HEARTBEAT_MIN_TTL_S": "2",
    "CORRAL_HEARTBEAT_GRACE_S": "2",
    "CORRAL_POLL_INTERVAL_S": "0.2",
    "CORRAL_EVAL_LEASE_S": "5",
}


class Cluster:
    def __init__(
        self, corral: CorralFactory, database_url: str, workdir: Path, settings: dict[str, str] | None = None
    ) -> None:
        self.corral, self.workdir = corral, workdir
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", **FAST, **(settings or {})}
        self.server = corral(["server"], env=self.env)
        self.roles = [self.server, *(corral([role], env=self.env) for role in ("worker", "applier", "leader"))]
        wait_healthy(self.base, self.server)
        self.pg = psycopg.connect(libpq_url(database_url), autocommit=True)
        self.http = httpx.Client(base_url=self.base, timeout=30)

    def client(self, name: str, *args: str, env: dict[str, str] | None = None) -> Corral:
        # Its own working directory: the client keeps its state in ./.corral-client there.
        home = self.workdir / name
        home.mkdir(exist_ok=True)
        # raw_exec is off by default outside -dev; these clusters run raw_exec work unless told otherwise.
        drivers = [] if "--driver" in args else ["--driver", "raw_exec", "--driver", "mock"]
        process = self.corral(
            ["client", "--name", name, *drivers, *args],
            env={**self.env, "CORRAL_ADDR": self.base, **(env or {})},
            cwd=home,
        )
        assert wait_for(lambda: self.node_status(name) == "ready", 60), process.output
        return process

    def node_status(self, name: str) -> str | None:
        row = self.pg.execute("SELECT status FROM nodes WHERE name = %s", (name,)).fetchone()
        return None if row is None else str(row[0])

    def node_id(self, name: str) -> str:
        row = self.pg.execute("SELECT id FROM nodes WHERE name = %s", (name,)).fetchone()
        assert row is not None
        return str(row[0])

    def register(self, job: dict[str, Any]) -> None:
        answer = self.http.put("/v1/jobs", json={"Job": job})
        assert answer.status_code == 200, answer.text

    def allocs(self, job_id: str) -> list[dict[str, Any]]:
        return list(self.http.get(f"/v1/job/{job_id}/allocations").json())

    def quiet(self) -> bool:
        """No evaluation or plan is waiting to be worked on right now."""
        row = self.pg.execute(
            "SELECT (SELECT count(*) FROM evaluations WHERE status = 'pending' "
            "AND (wait_until IS NULL OR wait_until <= now())), (SELECT count(*) FROM plans WHERE status = 'pending')"
        ).fetchone()
        return row == (0, 0)

    def settle(self) -> None:
        """Wait until the pipeline has nothing left to do, twice in a row a poll interval apart."""
        assert wait_for(self.quiet, 60)
        time.sleep(float(FAST["CORRAL_POLL_INTERVAL_S"]) * 3)
        assert wait_for(self.quiet, 60)

    def close(self) -> None:
        self.http.close()
        self.pg.close()


class Site:
    """One test's corner of the shared cluster: a datacenter named after the test, whose clients
    (named after it too) are the only nodes its jobs may use, so what another test's nodes do
    cannot reach it. Its jobs are purged and its clients killed when the test ends."""

    def __init__(self, cluster: Cluster, dc: str) -> None:
        self.cluster, self.dc = cluster, dc
        self.http, self.pg, self.base = cluster.http, cluster.pg, cluster.base
        self.jobs: list[str] = []
        self.clients: list[Corral] = []

    def name(self, node: str) -> str:
        return f"{self.dc}-{node}"

    def client(self, node: str, *args: str) -> Corral:
        process = self.cluster.client(self.name(node), "-dc", self.dc, *args)
        self.clients.append(process)
        return process

    def client_dir(self, node: str) -> Path:
        return self.cluster.workdir / self.name(node)

    def node_id(self, node: str) -> str:
        return self.cluster.node_id(self.name(node))

    def node_status(self, node: str) -> str | None:
        return self.cluster.node_status(self.name(node))

    def register(self, spec: dict[str, Any]) -> None:
        self.cluster.register({**spec, "Datacenters": [self.dc]})
        self.jobs.append(str(spec["ID"]))

    def allocs(self, job_id: str) -> list[dict[str, Any]]:
        return self.cluster.allocs(job_id)

    def settle(self) -> None:
        self.cluster.settle()

    def close(self) -> None:
        for job_id in self.jobs:
            self.http.delete(f"/v1/job/{job_id}", params={"purge": "true"}).raise_for_status()
        for process in self.clients:
            process.kill_all()


def mock_task(name: str = "t", **config: Any) -> dict[str, Any]:
    return {"Name": name, "Driver": "mock", "Config": config, "Resources": {"CPU": 10, "MemoryMB": 10}}


def job(
    job_id: str, tasks: list[dict[str, Any]], *, count: int = 1, kind: str = "service", **group: Any
) -> dict[str, Any]:
    return {
        "ID": job_id,
        "Type": kind,
        "TaskGroups": [{"Name": "g", "Count": count, "Tasks": tasks, "EphemeralDisk": {"SizeMB": 10}, **group}],
    }
