"""Deployments against real processes (server, worker, applier, leader and `corral client`
with the mock driver): a rolling update that never has more than max_parallel allocations out
of service, canaries promoted by hand and automatically, and a deployment that misses its
progress deadline and reverts to the stable version."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
SECOND = 1_000_000_000


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, module_workdir: Path) -> Iterator[Cluster]:
    """One cluster and one mock-driver client, c1, for every test here: each test rolls out a
    job of its own (named after the test) and purges it at the end."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    running.client("c1", "--driver", "mock")
    yield running
    running.close()


@pytest.fixture
def job_id(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """This test's job ID; the job is purged afterwards so the shared client runs only the
    current test's allocations."""
    name = request.node.name.removeprefix("test_")[:60]
    yield name
    cluster.http.delete(f"/v1/job/{name}", params={"purge": "true"}).raise_for_status()


def service(job_id: str, version_tag: str, *, count: int, **update: Any) -> dict[str, Any]:
    """A service whose tasks run until stopped; changing the tag is a destructive update."""
    block = {
        "MaxParallel": 1,
        "MinHealthyTime": SECOND,
        "HealthyDeadline": 20 * SECOND,
        "ProgressDeadline": 60 * SECOND,
    }
    spec = job(job_id, [mock_task(tag=version_tag)], count=count, Update={**block, **update})
    spec["TaskGroups"][0]["RestartPolicy"] = {"Attempts": 0, "Mode": "fail"}
    return spec


def deployments(cluster: Cluster, job_id: str) -> list[dict[str, Any]]:
    rows = cluster.pg.execute(
        "SELECT id::text, job_version, status, status_description, task_groups FROM deployments "
        "WHERE job_id = %s ORDER BY create_index",
        (job_id,),
    ).fetchall()
    return [
        {"ID": r[0], "JobVersion": r[1], "Status": r[2], "StatusDescription": r[3], "TaskGroups": r[4]} for r in rows
    ]


def latest(cluster: Cluster, job_id: str) -> dict[str, Any]:
    found = deployments(cluster, job_id)
    return found[-1] if found else {"JobVersion": None, "Status": None}


def job_version(cluster: Cluster, job_id: str) -> tuple[int, bool]:
    row = cluster.pg.execute("SELECT version, stable FROM jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return int(str(row[0])), bool(row[1])


def live(cluster: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [a for a in cluster.allocs(job_id) if a["DesiredStatus"] == "run" and a["ClientStatus"] != "failed"]


def healthy(alloc: dict[str, Any]) -> bool:
    return bool((alloc.get("DeploymentStatus") or {}).get("Healthy"))


def deployed(cluster: Cluster, job_id: str, version: int, count: int) -> bool:
    """The version's deployment succeeded and exactly `count` of its allocations run, nothing else."""
    allocs = live(cluster, job_id)
    return (
        latest(cluster, job_id)["JobVersion"] == version
        and latest(cluster, job_id)["Status"] == "successful"
        and len(allocs) == count
        and all(a["JobVersion"] == version and a["ClientStatus"] == "running" and healthy(a) for a in allocs)
    )


def test_rolling_update_never_has_more_than_max_parallel_out_of_service(cluster: Cluster, job_id: str) -> None:
    cluster.register(service(job_id, "v0", count=4, MaxParallel=2))
    assert wait_for(lambda: deployed(cluster, job_id, 0, 4), 90), deployments(cluster, job_id)
    assert job_version(cluster, job_id) == (0, True)  # the first successful deployment marks it stable

    cluster.register(service(job_id, "v1", count=4, MaxParallel=2))
    worst, new_in_flight = 0, 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not deployed(cluster, job_id, 1, 4):
        allocs = cluster.allocs(job_id)
        serving = [
            a
            for a in allocs
            if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running" and (a["JobVersion"] == 0 or healthy(a))
        ]
        fresh = [a for a in allocs if a["JobVersion"] == 1 and a["DesiredStatus"] == "run" and not healthy(a)]
        worst = max(worst, 4 - len(serving))
        new_in_flight = max(new_in_flight, len(fresh))
        time.sleep(0.05)
    assert deployed(cluster, job_id, 1, 4), (deployments(cluster, job_id), cluster.allocs(job_id))
    assert worst <= 2, worst
    assert new_in_flight <= 2, new_in_flight
    assert worst >= 1  # it did roll: some were replaced
    assert job_version(cluster, job_id) == (1, True)
    triggers = {
        r[0] for r in cluster.pg.execute("SELECT DISTINCT triggered_by FROM evaluations WHERE job_id = %s", (job_id,))
    }
    assert "deployment-watcher" in triggers  # healthy allocations moved the rollout on


def test_canary_waits_for_manual_promotion_then_rolls_the_rest(
    cluster: Cluster, job_id: str, corral: CorralFactory
) -> None:
    cluster.register(service(job_id, "v0", count=3))
    assert wait_for(lambda: deployed(cluster, job_id, 0, 3), 90), deployments(cluster, job_id)

    cluster.register(service(job_id, "v1", count=3, Canary=1))

    def canary_healthy() -> bool:
        canaries = [a for a in live(cluster, job_id) if a["JobVersion"] == 1]
        return (
            len(canaries) == 1 and healthy(canaries[0]) and bool((canaries[0]["DeploymentStatus"] or {}).get("Canary"))
        )

    assert wait_for(canary_healthy, 60), cluster.allocs(job_id)
    time.sleep(3)  # several watcher ticks: nothing else moves without promotion
    allocs = live(cluster, job_id)
    assert sorted(a["JobVersion"] for a in allocs) == [0, 0, 0, 1]
    current = latest(cluster, job_id)
    assert current["Status"] == "running" and "requires manual promotion" in current["StatusDescription"]
    assert current["TaskGroups"]["g"]["DesiredCanaries"] == 1 and not current["TaskGroups"]["g"]["Promoted"]

    status = corral(["deployment", "status", current["ID"][:8]], env={"CORRAL_ADDR": cluster.base})
    assert status.wait() == 0, status.output
    assert "requires manual promotion" in status.output
    promote = corral(["deployment", "promote", current["ID"][:8]], env={"CORRAL_ADDR": cluster.base})
    assert promote.wait() == 0, promote.output
    assert wait_for(lambda: deployed(cluster, job_id, 1, 3), 90), (deployments(cluster, job_id), cluster.allocs(job_id))
    assert latest(cluster, job_id)["TaskGroups"]["g"]["Promoted"] is True
    assert job_version(cluster, job_id) == (1, True)


def test_canary_auto_promotes_when_healthy(cluster: Cluster, job_id: str) -> None:
    cluster.register(service(job_id, "v0", count=2))
    assert wait_for(lambda: deployed(cluster, job_id, 0, 2), 90), deployments(cluster, job_id)

    cluster.register(service(job_id, "v1", count=2, Canary=1, AutoPromote=True))
    assert wait_for(lambda: deployed(cluster, job_id, 1, 2), 90), (deployments(cluster, job_id), cluster.allocs(job_id))
    assert latest(cluster, job_id)["TaskGroups"]["g"]["Promoted"] is True
    assert job_version(cluster, job_id) == (1, True)


def test_progress_deadline_fails_the_deployment_and_reverts_to_the_stable_version(
    cluster: Cluster, job_id: str
) -> None:
    cluster.register(service(job_id, "v0", count=2))
    assert wait_for(lambda: deployed(cluster, job_id, 0, 2), 90), deployments(cluster, job_id)

    broken = service(
        job_id,
        "v1",
        count=2,
        AutoRevert=True,
        MinHealthyTime=SECOND,
        HealthyDeadline=2 * SECOND,
        ProgressDeadline=4 * SECOND,
    )
    broken["TaskGroups"][0]["Tasks"] = [mock_task(tag="v1", run_for="200ms", exit_code=1)]
    # Its failed allocation is replaced 5 s after it failed, not after a service's default 30 s:
    # still past the progress deadline (no replacement runs during the rollout), but the revert's
    # deployment does not wait half a minute to place its replacement.
    broken["TaskGroups"][0]["ReschedulePolicy"] = {
        "Attempts": 0,
        "Interval": 0,
        "Delay": 5 * SECOND,
        "DelayFunction": "constant",
        "MaxDelay": 0,
        "Unlimited": True,
    }
    cluster.register(broken)

    def reverted() -> bool:
        found = deployments(cluster, job_id)
        return any(d["JobVersion"] == 1 and d["Status"] == "failed" for d in found) and deployed(cluster, job_id, 2, 2)

    assert wait_for(reverted, 120), (deployments(cluster, job_id), cluster.allocs(job_id))
    failed = next(d for d in deployments(cluster, job_id) if d["JobVersion"] == 1)
    assert failed["StatusDescription"] == "Failed due to progress deadline - rolling back to job version 0"
    spec = cluster.http.get(f"/v1/job/{job_id}").json()
    assert spec["Version"] == 2 and spec["TaskGroups"][0]["Tasks"][0]["Config"] == {"tag": "v0"}
    assert job_version(cluster, job_id) == (2, True)
