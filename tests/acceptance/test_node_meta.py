"""Dynamic node metadata end to end: `corral node meta apply` reaches the node's client through
the servers, the client keeps it (a restart keeps it too) and registers again with it merged
into the node's Meta, so a job constrained on it is placed there; `-unset` removes a static key."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CORRAL, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": cluster.base}
    return subprocess.run([CORRAL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_node_meta_apply_read_constraints_and_restart(cluster: Cluster) -> None:
    client = cluster.client("c1", "--meta", "zone=a")
    node_id = cluster.node_id("c1")
    constrained = job("placed", [mock_task(run_for="1h")])
    constrained["Constraints"] = [{"LTarget": "${meta.rack}", "RTarget": "r1", "Operand": "="}]
    cluster.register(constrained)
    cluster.settle()
    assert cluster.allocs("placed") == []  # no node has the key yet
    applied = cli(cluster, "node", "meta", "apply", "-node-id", node_id[:8], "-unset", "zone", "rack=r1")
    assert applied.returncode == 0, applied.stderr + client.output
    node = cluster.http.get(f"/v1/node/{node_id}").json()
    assert node["Meta"].get("rack") == "r1" and "zone" not in node["Meta"]
    assert node["Status"] == "ready"  # the update re-registered a live node: it stays in service
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("placed")] == ["running"], 60)
    read = cli(cluster, "node", "meta", "read", "-node-id", node_id)
    assert read.returncode == 0, read.stderr
    sections = read.stdout.split("\n\n")
    assert sections[0].splitlines()[0] == "All Meta" and "rack = r1" in sections[0] and "zone" not in sections[0]
    assert "rack = r1" in sections[1] and "zone = <unset>" in sections[1]
    assert "zone = a" in sections[2]
    as_json = json.loads(cli(cluster, "node", "meta", "read", "-node-id", node_id, "-json").stdout)
    assert as_json["Dynamic"] == {"rack": "r1", "zone": None} and as_json["Static"] == {"zone": "a"}
    bad = cluster.http.post("/v1/client/metadata", json={"NodeID": node_id, "Meta": {"bad key": "x"}})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "Meta.bad key"
    client.process.send_signal(signal.SIGTERM)  # a client's stop leaves its saved state
    assert client.wait(30) == 0, client.output
    client = cluster.client("c1", "--meta", "zone=a")  # the same working directory: its saved state

    def kept() -> bool:  # the node stayed ready across the restart: wait for the new client to answer
        reply = cluster.http.get("/v1/client/metadata", params={"node_id": node_id})
        return reply.status_code == 200 and reply.json()["Meta"] == {"rack": "r1"}

    assert wait_for(kept, 60), client.output
    assert cluster.http.get(f"/v1/node/{node_id}").json()["Meta"] == {"rack": "r1"}  # registered with it again
    client.kill_all()
