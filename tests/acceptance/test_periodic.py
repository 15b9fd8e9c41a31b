"""Periodic and parameterized jobs on a real cluster (server, worker, applier, leader and a
client as processes): a periodic job with prohibit_overlap whose child outlives the schedule's
interval skips the launches it overlaps, and the CLI forces launches and dispatches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
RUN_FOR_S = 4


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, module_workdir: Path) -> Iterator[Cluster]:
    """One cluster and one mock client for both tests: each registers jobs of its own."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    running.client("c1", "--driver", "mock")
    yield running
    running.close()


def children(cluster: Cluster, parent: str) -> list[tuple[str, int]]:
    rows = cluster.pg.execute("SELECT id FROM jobs WHERE parent_id = %s ORDER BY id", (parent,)).fetchall()
    return sorted((str(r[0]), int(str(r[0]).rsplit("-", 1)[1])) for r in rows)


def statuses(cluster: Cluster, job_id: str) -> list[str]:
    return [a["ClientStatus"] for a in cluster.http.get(f"/v1/job/{job_id}/allocations").json()]


def test_prohibit_overlap_skips_launches_while_the_child_runs(cluster: Cluster, corral: CorralFactory) -> None:
    parent = job("tick", [mock_task(run_for=f"{RUN_FOR_S}s")], kind="batch")
    parent["Periodic"] = {"Spec": "* * * * * * *", "ProhibitOverlap": True}  # every second (7 fields)
    cluster.register(parent)
    assert wait_for(lambda: len(children(cluster, "tick")) >= 1, 60)
    first, first_at = children(cluster, "tick")[0]
    assert wait_for(lambda: statuses(cluster, first) == ["running"], 60)
    assert [c for c, _ in children(cluster, "tick")] == [first]  # launches skipped while it runs
    assert wait_for(lambda: statuses(cluster, first) == ["complete"], 60)
    assert wait_for(lambda: len(children(cluster, "tick")) >= 2, 60)
    # The second child was launched only after the first ran its whole RUN_FOR_S seconds: every
    # second in between was skipped, not launched and not made up for later.
    second_at = children(cluster, "tick")[1][1]
    assert second_at - first_at >= RUN_FOR_S
    # The parent itself never ran anything.
    assert statuses(cluster, "tick") == []

    # Stopped, it launches no more; forcing it is then refused by name.
    assert cluster.http.delete("/v1/job/tick").status_code == 200
    count = len(children(cluster, "tick"))
    cluster.settle()
    assert len(children(cluster, "tick")) == count
    refused = corral(["job", "periodic", "force", "tick"], env={"CORRAL_ADDR": cluster.base})
    assert refused.wait(60) == 1
    assert "JobID" in refused.output and "stopped" in refused.output


def test_cli_forces_a_launch_and_dispatches(cluster: Cluster, corral: CorralFactory, workdir: Path) -> None:
    nightly = job("nightly", [mock_task(run_for="10ms")], kind="batch")
    nightly["Periodic"] = {"Spec": "0 3 * * *", "TimeZone": "Europe/Berlin"}
    cluster.register(nightly)
    env = {"CORRAL_ADDR": cluster.base}
    forced = corral(["job", "periodic", "force", "nightly"], env=env)
    assert forced.wait(60) == 0, forced.output
    [(child, _)] = children(cluster, "nightly")
    assert wait_for(lambda: statuses(cluster, child) == ["complete"], 60)

    render = job("render", [mock_task(run_for="10ms")], kind="batch")
    render["ParameterizedJob"] = {"Payload": "required", "MetaRequired": ["input"]}
    cluster.register(render)
    missing = corral(["job", "dispatch", "render"], env=env)
    assert missing.wait(60) == 1
    assert "Payload" in missing.output and "Meta.input" in missing.output
    payload = workdir / "payload.txt"  # the CLI runs in workdir
    payload.write_bytes(b"frame 7")
    done = corral(["job", "dispatch", "-meta", "input=a.png", "-payload-file", payload.name, "render"], env=env)
    assert done.wait(60) == 0, done.output
    dispatched = next(line.split("=", 1)[1].strip() for line in done.output.splitlines() if "Dispatched" in line)
    assert dispatched.startswith("render/dispatch-")
    assert wait_for(lambda: statuses(cluster, dispatched) == ["complete"], 60)
    assert statuses(cluster, "render") == []
