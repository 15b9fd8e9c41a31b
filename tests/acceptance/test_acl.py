"""ACLs end to end on real processes (API, worker, applier, leader, client, CLI) with
CORRAL_ACL_ENABLED=true: bootstrap, a policy and a client token; anonymous calls are refused;
the client token reads its namespace and cannot write; a client with an introduction token
registers and runs the management token's job; a client without one cannot register."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CORRAL, Corral, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir, {"CORRAL_ACL_ENABLED": "true"})
    yield running
    running.close()


def start_client(cluster: Cluster, name: str, token: str) -> Corral:
    home = cluster.workdir / name
    home.mkdir(exist_ok=True)
    env = {**cluster.env, "CORRAL_ADDR": cluster.base, **({"CORRAL_TOKEN": token} if token else {})}
    return cluster.corral(["client", "--name", name, "--driver", "mock"], env=env, cwd=home)


def cli(cluster: Cluster, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": cluster.base, "CORRAL_TOKEN": token}
    return subprocess.run([CORRAL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_acls_end_to_end(cluster: Cluster) -> None:
    http = cluster.http
    boot = http.post("/v1/acl/bootstrap")
    assert boot.status_code == 200, boot.text
    root = {"X-Nomad-Token": boot.json()["SecretID"]}
    assert http.post("/v1/acl/bootstrap").status_code == 400

    rules = 'namespace "default" { policy = "read" }'
    assert http.put("/v1/acl/policy/readers", json={"Rules": rules}, headers=root).status_code == 200
    made = http.put("/v1/acl/token", json={"Name": "r", "Type": "client", "Policies": ["readers"]}, headers=root)
    reader = {"X-Nomad-Token": made.json()["SecretID"]}
    intro_rules = 'node { policy = "write" }'
    assert http.put("/v1/acl/policy/intro", json={"Rules": intro_rules}, headers=root).status_code == 200
    intro = http.put("/v1/acl/token", json={"Type": "client", "Policies": ["intro"]}, headers=root).json()["SecretID"]

    anonymous_node = {
        "ID": "00000000-0000-4000-8000-000000000001",
        "Name": "rogue",
        "NodeResources": {"Cpu": {"CpuShares": 100000}, "Memory": {"MemoryMB": 1000000}},
    }
    refused = http.put("/v1/node/register", json={"Node": anonymous_node})
    assert refused.status_code == 403 and refused.text == "Permission denied"
    assert http.put("/v1/jobs", json={"Job": job("web", [mock_task()])}).status_code == 403

    assert http.put("/v1/jobs", json={"Job": job("web", [mock_task()])}, headers=root).status_code == 200
    assert http.get("/v1/jobs", headers=reader).status_code == 200
    assert http.get("/v1/job/web", headers=reader).status_code == 200
    assert http.put("/v1/jobs", json={"Job": job("other", [mock_task()])}, headers=reader).status_code == 403
    assert http.delete("/v1/job/web", headers=reader).status_code == 403

    stranger = start_client(cluster, "stranger", "")
    assert wait_for(lambda: "403" in stranger.output, 60), stranger.output
    assert cluster.node_status("stranger") is None

    start_client(cluster, "trusted", intro)
    assert wait_for(lambda: cluster.node_status("trusted") == "ready", 60)

    def running() -> list[str]:
        return [a["ClientStatus"] for a in http.get("/v1/job/web/allocations", headers=root).json()]

    assert wait_for(lambda: running() == ["running"], 60), running()
    reads = http.get("/v1/job/web/allocations", headers=reader)
    assert reads.status_code == 200 and len(reads.json()) == 1
    alloc_id = reads.json()[0]["ID"]
    assert http.post(f"/v1/allocation/{alloc_id}/stop", headers=reader).status_code == 403

    # The CLI sends CORRAL_TOKEN on every command.
    me = cli(cluster, reader["X-Nomad-Token"], "acl", "token", "self")
    assert me.returncode == 0 and "readers" in me.stdout, me.stderr
    denied = cli(cluster, reader["X-Nomad-Token"], "operator", "scheduler", "get-config")
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    assert cli(cluster, root["X-Nomad-Token"], "operator", "scheduler", "get-config").returncode == 0
    with pytest.raises(httpx.HTTPStatusError):
        http.get("/v1/nodes").raise_for_status()
