"""Preemption through the real processes (server, worker, applier, leader) and the real CLI:
the seed's worked example end to end, and priority inversion gone for system and service jobs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.processes import Corral, CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance
Conn = psycopg.Connection[tuple[object, ...]]
GB = 1024


class Cluster:
    def __init__(self, corral: CorralFactory, database_url: str, workdir: Path) -> None:
        self.base = f"http://127.0.0.1:{free_port()}"
        self.env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_POLL_INTERVAL_S": "0.2"}
        self.corral, self.workdir = corral, workdir
        server = corral(["server"], env={**self.env, "CORRAL_BIND": self.base.removeprefix("http://")})
        for role in ("worker", "applier", "leader"):
            corral([role], env=self.env)
        wait_healthy(self.base, server)

    def cli(self, *args: str) -> Corral:
        process = self.corral(list(args), env={"CORRAL_ADDR": self.base}, cwd=self.workdir)
        process.wait(60)
        return process

    def register(self, spec: dict[str, Any]) -> None:
        resp = httpx.put(f"{self.base}/v1/jobs", json={"Job": spec})
        assert resp.status_code == 200, resp.text

    def allocs(self, job_id: str) -> list[dict[str, Any]]:
        resp = httpx.get(f"{self.base}/v1/job/{job_id}/allocations")
        assert resp.status_code == 200, resp.text
        return sorted(resp.json(), key=lambda a: a["CreateIndex"])

    def live(self, job_id: str) -> list[dict[str, Any]]:
        return [a for a in self.allocs(job_id) if a["DesiredStatus"] == "run"]

    def evals(self, job_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = httpx.get(f"{self.base}/v1/job/{job_id}/evaluations").json()
        return found

    def settled(self) -> bool:
        """Nothing pending or in flight: every evaluation ended or waits as blocked."""
        return all(e["Status"] != "pending" for e in httpx.get(f"{self.base}/v1/evaluations").json())


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    yield Cluster(corral, database_url, workdir)


def add_node(pg: Conn, name: str, *, cpu: int, memory: int, disk: int, dc: str = "dc1") -> None:
    pg.execute(
        "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
        "status_updated_at, scheduling_eligibility, drivers, cpu_shares, memory_mb, disk_mb, create_index, "
        "modify_index) VALUES (gen_random_uuid(), 'x', %s, %s, 'default', %s, 'ready', now(), 'eligible', "
        '\'{"mock": {"Healthy": true}}\', %s, %s, %s, 1, 1)',
        (name, dc, f"v1:{dc}", cpu, memory, disk),
    )
    pg.execute("INSERT INTO state_index (name, value) VALUES ('nodes', state_index_own())")


def group(name: str, *, cpu: int, memory: int, disk: int, count: int = 1) -> dict[str, Any]:
    return {
        "Name": name,
        "Count": count,
        "EphemeralDisk": {"SizeMB": disk},
        "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": cpu, "MemoryMB": memory}}],
    }


def job(job_id: str, priority: int, groups: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"ID": job_id, "Priority": priority, "Datacenters": ["dc1"], "TaskGroups": groups, **fields}


def test_seed_worked_example(cluster: Cluster, pg: Conn, workdir: Path) -> None:
    # The seed's node, exactly full in memory and disk once its five allocations run.
    add_node(pg, "seed", cpu=3000, memory=5 * GB, disk=2536)
    cluster.register(job("cache", 70, [group("cache", cpu=1000, memory=2 * GB, disk=512)]))
    analytics = group("analytics", cpu=500, memory=GB, disk=512)
    cluster.register(job("batch-analytics", 50, [analytics], Type="batch"))
    email = [group("a1", cpu=10, memory=GB // 2, disk=800), group("a2", cpu=10, memory=GB // 2, disk=200)]
    cluster.register(job("email-marketing", 20, email, Type="batch"))
    assert wait_for(lambda: len(cluster.live("batch-analytics")) == 1 and len(cluster.live("email-marketing")) == 2)
    # a4 is the second batch-analytics allocation: the younger of two equal candidates goes first.
    cluster.register(job("batch-analytics", 50, [{**analytics, "Count": 2}], Type="batch"))
    assert wait_for(lambda: len(cluster.live("batch-analytics")) == 2 and cluster.settled())
    [a6] = cluster.live("cache")
    a5, a4 = cluster.live("batch-analytics")
    a1, a2 = sorted(cluster.live("email-marketing"), key=lambda a: a["TaskGroup"])

    webapp = job("webapp", 75, [group("web", cpu=100, memory=2 * GB, disk=GB)])
    spec_file = workdir / "webapp.json"
    spec_file.write_text(json.dumps({"Job": webapp}))
    # Service preemption is off by default: the plan reports the placement failure.
    blocked = cluster.cli("job", "plan", spec_file.name)
    assert blocked.process.returncode == 1, blocked.output
    assert "WARNING: Failed to place all allocations." in blocked.output

    enable = cluster.cli("operator", "scheduler", "set-config", "-preempt-service-scheduler=true")
    assert enable.process.returncode == 0 and "Scheduler configuration updated!" in enable.output
    shown = cluster.cli("operator", "scheduler", "get-config")
    assert "Preemption Service Scheduler  = true" in shown.output, shown.output

    plan = cluster.cli("job", "plan", spec_file.name)
    assert plan.process.returncode == 1, plan.output
    out = plan.output
    assert '+ Task Group: "web" (1 create)' in out
    assert "Scheduler dry-run:\n- All tasks successfully allocated." in out and "Preemptions:" in out
    table = out[out.index("Preemptions:") :].splitlines()
    assert table[2].split() == ["Alloc", "ID", "Job", "ID", "Task", "Group"]
    shown_victims = {tuple(line.split()) for line in table[3:6]}
    assert shown_victims == {
        (a1["ID"][:8], "email-marketing", "a1"),
        (a2["ID"][:8], "email-marketing", "a2"),
        (a4["ID"][:8], "batch-analytics", "analytics"),
    }
    assert pg.execute("SELECT count(*) FROM jobs WHERE id = 'webapp'").fetchone() == (0,)  # a dry run

    run = cluster.cli("job", "run", "-detach", "-check-index", "0", spec_file.name)  # no client: no deployment ends
    assert run.process.returncode == 0, run.output
    assert wait_for(lambda: len(cluster.live("webapp")) == 1 and cluster.settled())
    [web] = cluster.live("webapp")
    victims = {a1["ID"], a2["ID"], a4["ID"]}
    assert set(web["PreemptedAllocations"]) == victims
    for victim in victims:
        row = httpx.get(f"{cluster.base}/v1/allocation/{victim}").json()
        assert row["DesiredStatus"] == "evict"
        assert row["PreemptedByAllocation"] == web["ID"]
        assert row["DesiredDescription"] == f"Preempted by alloc ID {web['ID']}"
    for untouched in (a6, a5):
        assert httpx.get(f"{cluster.base}/v1/allocation/{untouched['ID']}").json()["DesiredStatus"] == "run"
    for victim_job in ("email-marketing", "batch-analytics"):
        preemption = [e for e in cluster.evals(victim_job) if e["TriggeredBy"] == "preemption"]
        assert len(preemption) == 1, preemption
    # No room for the evicted work: it waits as blocked evaluations...
    assert any(e["Status"] == "blocked" for e in cluster.evals("email-marketing"))
    # ...and is placed again once capacity returns.
    assert httpx.delete(f"{cluster.base}/v1/job/webapp").status_code == 200
    assert wait_for(lambda: len(cluster.live("email-marketing")) == 2 and len(cluster.live("batch-analytics")) == 2)


def test_priority_inversion_is_gone(cluster: Cluster, pg: Conn) -> None:
    for dc in ("dc1", "dc2"):
        for i in range(2):
            add_node(pg, f"{dc}-{i}", cpu=2000, memory=4 * GB, disk=10 * GB, dc=dc)
        filler = group("work", cpu=2000, memory=GB, disk=100, count=2)
        cluster.register(job(f"filler-{dc}", 20, [filler], Type="batch", Datacenters=[dc]))
    assert wait_for(lambda: len(cluster.live("filler-dc1")) == 2 and len(cluster.live("filler-dc2")) == 2)

    # System preemption is on by default: the system job runs on every dc1 node at once.
    agent = group("agent", cpu=500, memory=256, disk=100)
    cluster.register(job("agent", 90, [agent], Type="system"))
    assert wait_for(lambda: len(cluster.live("agent")) == 2 and cluster.settled())
    assert cluster.live("filler-dc1") == []
    assert len(cluster.live("filler-dc2")) == 2

    # Service preemption is off by default: the high-priority service job waits, blocked.
    service = job("api", 90, [group("api", cpu=1000, memory=GB, disk=100)], Datacenters=["dc2"])
    cluster.register(service)
    assert wait_for(lambda: cluster.settled() and any(e["Status"] == "blocked" for e in cluster.evals("api")))
    assert cluster.live("api") == []

    config = httpx.get(f"{cluster.base}/v1/operator/scheduler/configuration").json()["SchedulerConfig"]
    config["PreemptionConfig"]["ServiceSchedulerEnabled"] = True
    assert httpx.put(f"{cluster.base}/v1/operator/scheduler/configuration", json=config).json()["Updated"]
    cluster.register(service)  # the next evaluation sees the new configuration, no restart
    assert wait_for(lambda: len(cluster.live("api")) == 1 and cluster.settled())
    assert len(cluster.live("filler-dc2")) == 1
