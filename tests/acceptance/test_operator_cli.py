"""Nomad's daily verbs against real processes (server, worker, applier, leader, a raw_exec
client): `job run` monitored to the allocation it placed, `alloc status`, `alloc logs` with
-stderr, -tail and -f (which polls the log route from its last offset), `node status`, `eval
list`, `status <prefix>` (issue 19, items 1 and 2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def test_run_then_inspect_and_tail_the_allocation(cluster: Cluster, corral: CorralFactory, workdir: Path) -> None:
    cluster.client("c1")
    env = {"CORRAL_ADDR": cluster.base}
    script = "echo one; echo oops >&2; sleep 2; echo two; sleep 600"
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    (workdir / "talk.json").write_text(json.dumps({"Job": job("talk", [task], kind="batch")}))
    run = corral(["job", "run", "talk.json"], env=env, cwd=workdir)
    assert run.wait(120) == 0, run.output
    assert 'Evaluation triggered by job "talk"' in run.output and 'group "g"' in run.output, run.output
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("talk")] == ["running"], 60)
    alloc_id = cluster.allocs("talk")[0]["ID"]

    status = corral(["alloc", "status", alloc_id[:6]], env=env)
    assert status.wait(60) == 0, status.output
    assert f"ID                  = {alloc_id}" in status.output and 'Task "t" is "running"' in status.output

    err = corral(["alloc", "logs", "-stderr", alloc_id[:8]], env=env)
    assert err.wait(60) == 0 and err.output == "oops\n", err.output
    following = corral(["alloc", "logs", "-f", alloc_id[:8], "t"], env=env)
    assert wait_for(lambda: "two\n" in following.output, 60), following.output
    assert following.output.startswith("one\n"), following.output
    following.kill_all()
    tail = corral(["alloc", "logs", "-tail", "-n", "1", alloc_id[:8]], env=env)
    assert tail.wait(60) == 0 and tail.output == "two\n", tail.output

    nodes = corral(["node", "status"], env=env)
    assert nodes.wait(60) == 0 and nodes.output.split()[:8] == [
        "ID", "Node", "Pool", "DC", "Name", "Class", "Drain", "Eligibility",
    ], nodes.output  # fmt: skip
    evals = corral(["eval", "list", "-json"], env=env)
    assert evals.wait(60) == 0
    assert any(e["JobID"] == "talk" and e["Status"] == "complete" for e in json.loads(evals.output))
    by_prefix = corral(["status", alloc_id[:8]], env=env)
    assert by_prefix.wait(60) == 0 and f"ID                  = {alloc_id}" in by_prefix.output, by_prefix.output
