"""The simulated fleet: one process registers and heartbeats many mock nodes and runs their
allocations to completion through the same protocol as a real client."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import Corral, wait_for

pytestmark = pytest.mark.acceptance
NODES = 200


def test_simulated_fleet_stays_ready_and_runs_batch_work(
    corral: type[Corral], database_url: str, workdir: Path
) -> None:
    # TTLs of 5-10 s (plus 5 s grace): 200 nodes ask for about 30 heartbeats/s, well within what
    # a test machine serves while other tests run.
    cluster = Cluster(
        corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "5", "CORRAL_HEARTBEAT_GRACE_S": "5"}
    )
    fleet = corral(["fleet", "--nodes", str(NODES), "--threads", "8"], env={**cluster.env, "CORRAL_ADDR": cluster.base})
    ready = "SELECT count(*) FROM nodes WHERE status = 'ready' AND name LIKE 'sim-%'"
    assert wait_for(lambda: cluster.pg.execute(ready).fetchone() == (NODES,), 120), fleet.output
    cluster.register(job("sims", [mock_task(run_for="300ms")], count=100, kind="batch"))

    def done() -> bool:
        allocs = cluster.allocs("sims")
        return len(allocs) == 100 and all(a["ClientStatus"] == "complete" for a in allocs)

    assert wait_for(done, 120)
    assert len({a["NodeID"] for a in cluster.allocs("sims")}) > 1
    # Heartbeats have kept every node ready meanwhile.
    assert cluster.pg.execute(ready).fetchone() == (NODES,)
    fleet.process.send_signal(signal.SIGTERM)
    assert fleet.wait(30) == 0
    cluster.close()
