"""The simulated fleet: one process registers and heartbeats many mock nodes and runs their
allocations to completion through the same protocol as a real client."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import Corral, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
NODES = 100


def test_simulated_fleet_stays_ready_and_runs_batch_work(
    corral: CorralFactory, database_url: str, workdir: Path
) -> None:
    # TTLs of 5-10 s (plus 5 s grace): 100 nodes ask for about 15 heartbeats/s, well within what
    # a test machine serves while other tests run.
    cluster = Cluster(
        corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "5", "CORRAL_HEARTBEAT_GRACE_S": "5"}
    )
    # Compact mode (one cluster-wide watch); the realistic mode has its own test below.
    fleet = corral(
        ["fleet", "--nodes", str(NODES), "--threads", "8", "--mode", "compact"],
        env={**cluster.env, "CORRAL_ADDR": cluster.base},
    )
    ready = "SELECT count(*) FROM nodes WHERE status = 'ready' AND name LIKE 'sim-%'"
    assert wait_for(lambda: cluster.pg.execute(ready).fetchone() == (NODES,), 240), fleet.output
    cluster.register(job("sims", [mock_task(run_for="300ms")], count=50, kind="batch"))

    def done() -> bool:
        allocs = cluster.allocs("sims")
        return len(allocs) == 50 and all(a["ClientStatus"] == "complete" for a in allocs)

    assert wait_for(done, 240), fleet.output
    assert len({a["NodeID"] for a in cluster.allocs("sims")}) > 1
    # Heartbeats have kept every node ready meanwhile.
    assert cluster.pg.execute(ready).fetchone() == (NODES,)
    fleet.process.send_signal(signal.SIGTERM)
    assert fleet.wait(30) == 0
    cluster.close()


def _fleet_connections(fleet: Corral, port: int) -> list[tuple[str, int]]:
    """The fleet's open connections to the API port: (source address, source port)."""
    try:
        found = psutil.Process(fleet.process.pid).net_connections("tcp")
    except psutil.Error:
        return []
    return [(c.laddr.ip, c.laddr.port) for c in found if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED"]


def test_realistic_fleet_watches_per_node_and_recovers_from_dropped_connections(
    corral: CorralFactory, database_url: str, workdir: Path
) -> None:
    nodes = 60
    cluster = Cluster(
        corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "5", "CORRAL_HEARTBEAT_GRACE_S": "5"}
    )
    port = int(cluster.base.rsplit(":", 1)[1])
    fleet = corral(
        ["fleet", "--nodes", str(nodes), "--name-prefix", "real", "--nodes-per-address", "20"],
        env={**cluster.env, "CORRAL_ADDR": cluster.base},
    )
    ready = "SELECT count(*) FROM nodes WHERE status = 'ready' AND name LIKE 'real-%'"
    assert wait_for(lambda: cluster.pg.execute(ready).fetchone() == (nodes,), 120), fleet.output
    # One blocking query per node, held open, from three source addresses (20 nodes each), so the
    # servers' per-address limit (on by default) never sees more than a few dozen from one.
    assert wait_for(lambda: len(_fleet_connections(fleet, port)) >= nodes, 60), fleet.output
    assert len({address for address, _ in _fleet_connections(fleet, port)}) == 3

    def place_on(node: str, job_id: str) -> None:
        spec = job(job_id, [mock_task()])
        spec["Constraints"] = [{"LTarget": "${node.unique.name}", "RTarget": node, "Operand": "="}]
        # A fresh connection: the test's own keep-alive one may have died with a worker.
        answer = httpx.put(f"{cluster.base}/v1/jobs", json={"Job": spec}, timeout=30)
        assert answer.status_code == 200, answer.text

    def running_on(job_id: str, node: str) -> bool:
        try:
            allocs = httpx.get(f"{cluster.base}/v1/job/{job_id}/allocations", timeout=30).json()
        except httpx.HTTPError:
            return False
        return len(allocs) == 1 and allocs[0]["ClientStatus"] == "running" and allocs[0]["NodeID"] == node

    # The node the allocation is placed on finds it through its own query and starts it.
    place_on("real-00042", "pinned")
    assert wait_for(lambda: running_on("pinned", cluster.node_id("real-00042")), 60), fleet.output

    # An API worker dies with every connection it held: the nodes whose polls, heartbeats or
    # updates it served see their connection dropped, back off, and carry on.
    worker = max(cluster.server.descendants(), key=lambda proc: proc.create_time())
    worker.kill()
    place_on("real-00007", "after")
    assert wait_for(lambda: running_on("after", cluster.node_id("real-00007")), 90), fleet.output
    assert wait_for(lambda: len(_fleet_connections(fleet, port)) >= nodes, 60), fleet.output
    assert cluster.pg.execute(ready).fetchone() == (nodes,)
    assert fleet.process.poll() is None
    fleet.process.send_signal(signal.SIGTERM)
    assert fleet.wait(30) == 0
    cluster.close()


def test_a_restarted_fleet_takes_its_nodes_and_their_allocations_back(
    corral: CorralFactory, database_url: str, workdir: Path
) -> None:
    cluster = Cluster(corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "5"})
    args = ["fleet", "--nodes", "3", "--name-prefix", "kept", "--data-dir", "fleet-data"]  # in workdir
    env = {**cluster.env, "CORRAL_ADDR": cluster.base}
    fleet = corral(args, env=env)
    ready = "SELECT count(*) FROM nodes WHERE status = 'ready' AND name LIKE 'kept-%'"
    assert wait_for(lambda: cluster.pg.execute(ready).fetchone() == (3,), 120), fleet.output
    spec = job("kept", [mock_task(run_for="1h")])
    spec["Constraints"] = [{"LTarget": "${node.unique.name}", "RTarget": "kept-00001", "Operand": "="}]
    cluster.register(spec)

    def statuses() -> list[str]:
        return [str(a["ClientStatus"]) for a in cluster.allocs("kept")]

    assert wait_for(lambda: statuses() == ["running"], 60), fleet.output
    [before] = cluster.allocs("kept")
    fleet.kill_all()

    # The same nodes come back (no second set under the same names) and keep the allocation.
    fleet = corral(args, env=env)
    nodes = "SELECT count(*) FROM nodes WHERE name LIKE 'kept-%'"
    assert wait_for(lambda: cluster.pg.execute(ready).fetchone() == (3,), 120), fleet.output
    assert cluster.pg.execute(nodes).fetchone() == (3,)
    [after] = cluster.allocs("kept")
    assert (after["ID"], after["ClientStatus"]) == (before["ID"], "running")
    # It was taken back, not forgotten: stopping the job completes it on the node.
    assert cluster.http.delete("/v1/job/kept").status_code == 200
    assert wait_for(lambda: statuses() == ["complete"], 60), fleet.output
    fleet.process.send_signal(signal.SIGTERM)
    assert fleet.wait(30) == 0
    cluster.close()
