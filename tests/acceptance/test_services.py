"""Nomad's native service discovery and health checks with real processes (server, worker,
applier, leader and a `corral client` running raw_exec tasks): two Python HTTP servers on
dynamic ports register as service `web` with an HTTP check; killing one server makes its check
fail and `check_restart` restart its task; a new job version whose check fails is judged
unhealthy, its deployment fails (no progress deadline: Nomad fails it on the first unhealthy
allocation; with one, at the deadline) and auto_revert brings the passing version back;
stopping the job empties the catalog."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster
from tests.support.processes import CorralFactory, wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(900)]

# The task keeps running while its HTTP server may die: the check, not the task's exit, must
# notice. It records the server's PID so the test can kill just the server.
WEB_JOB = """
job "web" {
  datacenters = ["*"]
  update {
    max_parallel      = 2
    min_healthy_time  = "1s"
    healthy_deadline  = "15s"
    progress_deadline = "0s"
    auto_revert       = true
  }
  group "web" {
    count = 2
    network { port "http" {} }
    restart {
      attempts = 0
      mode     = "fail"
    }
    service {
      name     = "web"
      provider = "nomad"
      port     = "http"
      tags     = ["v-${NOMAD_ALLOC_INDEX}"]
      check {
        type     = "http"
        path     = "CHECK_PATH"
        interval = "1s"
        timeout  = "1s"
        check_restart {
          limit = 2
          grace = "2s"
        }
      }
    }
    task "srv" {
      driver = "raw_exec"
      env { CHECKED = "CHECK_PATH" }
      config {
        command = "/bin/sh"
        args = [
          "-c",
          "python3 -m http.server ${NOMAD_PORT_http} & echo $! > ${NOMAD_TASK_DIR}/server.pid; exec sleep 1000000",
        ]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, module_workdir: Path) -> Iterator[Cluster]:
    """One cluster and one client, c1, for both tests: each registers a job and a service of
    its own name."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    running.client("c1")
    yield running
    running.close()


def register(cluster: Cluster, path: str, healthy_deadline: str = "15s") -> dict[str, Any]:
    hcl = WEB_JOB.replace("CHECK_PATH", path).replace(
        'healthy_deadline  = "15s"', f'healthy_deadline  = "{healthy_deadline}"'
    )
    parsed = cluster.http.put("/v1/jobs/parse", json={"JobHCL": hcl})
    assert parsed.status_code == 200, parsed.text
    job: dict[str, Any] = parsed.json()
    answer = cluster.http.put("/v1/jobs", json={"Job": job})
    assert answer.status_code == 200, answer.text
    assert answer.json()["Warnings"] == ""  # a Nomad service is acted on: nothing to warn about
    return job


def instances(cluster: Cluster) -> list[dict[str, Any]]:
    return list(cluster.http.get("/v1/service/web").json())


def checks(cluster: Cluster, alloc_id: str) -> list[dict[str, Any]]:
    answer = cluster.http.get(f"/v1/client/allocation/{alloc_id}/checks")
    return list(answer.json().values()) if answer.status_code == 200 else []


def passing(cluster: Cluster, alloc_id: str) -> bool:
    found = checks(cluster, alloc_id)
    return bool(found) and all(c["Status"] == "success" for c in found)


def running(cluster: Cluster) -> list[dict[str, Any]]:
    return [a for a in cluster.allocs("web") if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"]


def restarts(cluster: Cluster, alloc_id: str) -> int:
    state = cluster.http.get(f"/v1/allocation/{alloc_id}").json()["TaskStates"]["srv"]
    return int(state.get("Restarts") or 0)


def latest_deployment(cluster: Cluster, job_id: str = "web") -> dict[str, Any]:
    found = cluster.http.get(f"/v1/job/{job_id}/deployment").json()
    return found or {}


def test_services_register_checks_pass_fail_restart_and_gate_deployments(
    cluster: Cluster, corral: CorralFactory
) -> None:
    register(cluster, "/")
    assert wait_for(lambda: len(running(cluster)) == 2 and len(instances(cluster)) == 2, 120), instances(cluster)
    allocs = running(cluster)
    by_alloc = {reg["AllocID"]: reg for reg in instances(cluster)}
    assert set(by_alloc) == {a["ID"] for a in allocs}
    for alloc in allocs:
        full = cluster.http.get(f"/v1/allocation/{alloc['ID']}").json()
        port = next(p["Value"] for p in full["AllocatedResources"]["Shared"]["Ports"] if p["Label"] == "http")
        reg = by_alloc[alloc["ID"]]
        assert reg["Port"] == port and reg["ID"] == f"_nomad-task-{alloc['ID']}-group-web-web-http"
        assert reg["JobID"] == "web" and reg["NodeID"] == cluster.node_id("c1")
    assert wait_for(lambda: all(passing(cluster, a["ID"]) for a in allocs), 60)
    (result,) = checks(cluster, allocs[0]["ID"])
    assert (result["Mode"], result["Group"], result["Service"], result["StatusCode"]) == (
        "healthiness",
        "web",
        "web",
        200,
    )
    assert wait_for(lambda: latest_deployment(cluster).get("Status") == "successful", 90), latest_deployment(cluster)

    cli = {"CORRAL_ADDR": cluster.base}
    listed = corral(["service", "list"], env=cli)
    assert listed.wait() == 0 and "web" in listed.output and "v-0" in listed.output, listed.output
    status = corral(["alloc", "status", allocs[0]["ID"]], env=cli)
    assert status.wait() == 0, status.output
    assert "Nomad Service Checks:" in status.output and "(group)" in status.output and "success" in status.output

    # Kill one HTTP server: its check fails and check_restart restarts the task, which serves again.
    victim = allocs[0]["ID"]
    pid_file = cluster.http.get(f"/v1/client/fs/cat/{victim}", params={"path": "srv/local/server.pid"})
    assert pid_file.status_code == 200, pid_file.text
    os.kill(int(pid_file.text.strip()), signal.SIGKILL)
    assert wait_for(lambda: any(c["Status"] == "failure" for c in checks(cluster, victim)), 60)
    assert wait_for(lambda: restarts(cluster, victim) >= 1, 60), cluster.http.get(f"/v1/allocation/{victim}").text
    events = cluster.http.get(f"/v1/allocation/{victim}").json()["TaskStates"]["srv"]["Events"]
    assert any(e["Type"] == "Restart Signaled" and "healthcheck" in e["DisplayMessage"] for e in events)
    assert wait_for(lambda: passing(cluster, victim), 60)

    # A version whose check can never pass (its env changes too: new allocations replace the old):
    # its client judges each of its allocations unhealthy at the healthy deadline (a short one:
    # nothing of this version can turn healthy, so a longer one would only be waited out).
    register(cluster, "/missing", healthy_deadline="4s")

    def judged_unhealthy() -> bool:
        fresh = [a for a in cluster.allocs("web") if a["JobVersion"] == 1]
        return len(fresh) == 2 and all((a.get("DeploymentStatus") or {}).get("Healthy") is False for a in fresh)

    assert wait_for(judged_unhealthy, 120), [
        (a["JobVersion"], a.get("DeploymentStatus")) for a in cluster.allocs("web")
    ]

    # The rollout fails on them and auto_revert registers the last stable version again.
    def failed_rollout() -> bool:
        found = [d for d in cluster.http.get("/v1/job/web/deployments").json() if d["JobVersion"] == 1]
        return bool(found) and found[0]["Status"] == "failed"

    assert wait_for(failed_rollout, 120), cluster.http.get("/v1/job/web/deployments").text
    (failed,) = [d for d in cluster.http.get("/v1/job/web/deployments").json() if d["JobVersion"] == 1]
    assert "unhealthy" in failed["StatusDescription"] and "rolling back" in failed["StatusDescription"], failed

    def reverted() -> bool:
        job = cluster.http.get("/v1/job/web").json()
        return bool(job["Version"] >= 2 and job["TaskGroups"][0]["Tasks"][0]["Env"]["CHECKED"] == "/")

    assert wait_for(reverted, 120), cluster.http.get("/v1/job/web").json()["Version"]
    assert wait_for(lambda: latest_deployment(cluster).get("Status") == "successful", 120), latest_deployment(cluster)

    # Stopping the job deregisters every instance.
    assert cluster.http.delete("/v1/job/web").status_code == 200
    assert wait_for(lambda: instances(cluster) == [], 60), instances(cluster)


PROGRESS_DEADLINE_S = 10


def test_with_a_progress_deadline_a_check_that_cannot_pass_fails_the_deployment_at_the_deadline(
    cluster: Cluster,
) -> None:
    """Nomad's rule with a progress deadline: an unhealthy allocation does not fail the rollout
    (it is replaced); the deployment fails when the deadline passes without progress."""
    # A job and service of its own name: the other test's registrations are no concern of it.
    # Deadlines short but apart: the allocations turn unhealthy at 3 s, well before the rollout's
    # 10 s deadline, so the test sees an unhealthy allocation fail nothing before it.
    spec = (
        WEB_JOB.replace('job "web"', 'job "deadline"')
        .replace('name     = "web"', 'name     = "deadline"')
        .replace('progress_deadline = "0s"', f'progress_deadline = "{PROGRESS_DEADLINE_S}s"')
        .replace('healthy_deadline  = "15s"', 'healthy_deadline  = "3s"')
        .replace("auto_revert       = true", "auto_revert       = false")
        .replace("CHECK_PATH", "/missing")
    )
    parsed = cluster.http.put("/v1/jobs/parse", json={"JobHCL": spec})
    assert parsed.status_code == 200, parsed.text
    assert cluster.http.put("/v1/jobs", json={"Job": parsed.json()}).status_code == 200
    began = time.monotonic()

    def judged_unhealthy() -> bool:
        return any((a.get("DeploymentStatus") or {}).get("Healthy") is False for a in cluster.allocs("deadline"))

    assert wait_for(judged_unhealthy, 120), [a.get("DeploymentStatus") for a in cluster.allocs("deadline")]
    seen_unhealthy = time.monotonic() - began
    # Before the deadline has passed, an unhealthy allocation alone fails nothing.
    if seen_unhealthy < PROGRESS_DEADLINE_S:
        assert latest_deployment(cluster, "deadline")["Status"] == "running", latest_deployment(cluster, "deadline")
    assert wait_for(lambda: latest_deployment(cluster, "deadline").get("Status") == "failed", 180), latest_deployment(
        cluster, "deadline"
    )
    failed_after = time.monotonic() - began
    deployment = latest_deployment(cluster, "deadline")
    assert deployment["StatusDescription"] == "Failed due to progress deadline", deployment
    assert failed_after >= PROGRESS_DEADLINE_S, failed_after  # never before the deadline
    print(
        f"\nunhealthy after {seen_unhealthy:.1f} s; deployment failed after {failed_after:.1f} s"
        f" (deadline {PROGRESS_DEADLINE_S} s)"
    )
    assert cluster.http.get("/v1/job/deadline").json()["Version"] == 0  # no auto_revert: nothing registered again
    # Its allocations keep failing their check: stop them before the other test runs beside them.
    assert cluster.http.delete("/v1/job/deadline", params={"purge": "true"}).status_code == 200
