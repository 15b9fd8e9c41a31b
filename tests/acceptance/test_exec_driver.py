"""The exec driver for real: tasks of a real `corral client` run chrooted in their own PID
namespace as nobody, inside cgroups that enforce memory (an OOM kill is reported as Nomad does)
and pin the whole cores the scheduler reserved. Needs root and cgroup v1 (skipped elsewhere)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from client.drivers.exec import unusable_reason
from client.isolation.cgroups import ROOT, UNIFIED
from tests.support.cluster import Cluster
from tests.support.processes import CorralFactory, wait_for

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.skipif(unusable_reason() is not None, reason=f"exec cannot run here: {unusable_reason()}"),
]


@pytest.fixture(scope="module")
def parent() -> Iterator[str]:
    """A cgroup parent of this module's own; whatever is left in it is killed and removed after."""
    name = f"corral-test-{uuid.uuid4().hex[:8]}"
    yield name
    unified = UNIFIED / name
    if (unified / "cgroup.kill").exists():
        (unified / "cgroup.kill").write_text("1")
    for hierarchy in [*ROOT.iterdir(), UNIFIED]:
        top = hierarchy / name
        if top.is_dir() and not top.is_symlink():
            for group in sorted(top.glob("*/"), reverse=True):
                assert wait_for(partial(_removed, group), 10), f"{group} still busy"
            assert wait_for(partial(_removed, top), 10)


def _removed(group: Path) -> bool:
    try:
        group.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def shared(
    parent: str, module_corral: CorralFactory, module_database_url: str, module_workdir: Path
) -> Iterator[Cluster]:
    """One cluster and one exec client, c1, for every test here (the cgroup parent comes first so
    that it is cleaned up last, once the client is gone)."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    (module_workdir / "c1").mkdir()
    config = {"server": running.base, "cgroup_parent": parent}
    (module_workdir / "c1" / "client.json").write_text(json.dumps(config))
    running.client("c1", "--config=client.json", "--driver", "exec", "--driver", "raw_exec")
    yield running
    running.close()


@pytest.fixture
def cluster(shared: Cluster, parent: str) -> Iterator[Cluster]:
    """The shared cluster, left as the test found it: every job stopped and no task left in the
    cgroups (the cores test needs both cores free)."""
    yield shared
    for job_id in shared.http.get("/v1/jobs").json():
        shared.http.delete(f"/v1/job/{job_id['ID']}")
    assert wait_for(lambda: not _cgroup_tasks(parent), 60)


def _cgroup_tasks(parent: str) -> list[str]:
    top = UNIFIED / parent
    return [line for procs in top.rglob("cgroup.procs") for line in procs.read_text().split()] if top.exists() else []


def exec_job(job_id: str, script: str, *, kind: str = "batch", **resources: int) -> dict[str, Any]:
    return {
        "ID": job_id,
        "Type": kind,
        "TaskGroups": [
            {
                "Name": "g",
                "Count": 1,
                "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
                "EphemeralDisk": {"SizeMB": 10},
                "Tasks": [
                    {
                        "Name": "t",
                        "Driver": "exec",
                        "Config": {"command": "/bin/sh", "args": ["-c", script]},
                        "Resources": {"MemoryMB": 64, **resources},
                    }
                ],
            }
        ],
    }


def only_alloc(cluster: Cluster, job_id: str) -> dict[str, Any]:
    (alloc,) = cluster.allocs(job_id)
    full: dict[str, Any] = cluster.http.get(f"/v1/allocation/{alloc['ID']}").json()
    return full


def status_of(cluster: Cluster, job_id: str) -> list[str]:
    return [a["ClientStatus"] for a in cluster.allocs(job_id)]


def stdout(cluster: Cluster, alloc_id: str) -> str:
    answer = cluster.http.get(f"/v1/client/fs/logs/{alloc_id}", params={"task": "t", "type": "stdout", "plain": "true"})
    return answer.text if answer.status_code == 200 else ""


ISOLATION = """
id -un
echo pid=$$
echo procs=$(ls /proc | grep -c '^[0-9][0-9]*$')
echo dirs=$NOMAD_ALLOC_DIR,$NOMAD_TASK_DIR,$NOMAD_SECRETS_DIR
touch /etc/corral-exec-test 2>/dev/null || echo etc-refused
touch /corral-exec-test 2>/dev/null || echo root-refused
touch /alloc/../../corral-exec-test 2>/dev/null || echo escape-refused
echo hello > /local/written && echo local-ok
echo shared > /alloc/data/written && echo alloc-ok
"""


def test_an_exec_task_runs_as_nobody_alone_in_its_pid_namespace_and_writes_only_its_directories(
    cluster: Cluster,
) -> None:
    cluster.register(exec_job("iso", ISOLATION))
    assert wait_for(lambda: status_of(cluster, "iso") == ["complete"], 60), cluster.allocs("iso")
    alloc = only_alloc(cluster, "iso")
    lines = stdout(cluster, alloc["ID"]).splitlines()
    assert lines[:2] == ["nobody", "pid=1"]
    # The shell, the `ls` and the `grep` of the count: nothing of the host.
    assert int(lines[2].removeprefix("procs=")) <= 4
    assert lines[3:] == [
        "dirs=/alloc,/local,/secrets",
        "etc-refused",
        "root-refused",
        "escape-refused",
        "local-ok",
        "alloc-ok",
    ]
    alloc_dir = cluster.workdir / "c1" / ".corral-client" / "allocs" / alloc["ID"]
    written = alloc_dir / "t" / "local" / "written"
    assert written.read_text() == "hello\n" and written.stat().st_uid == 65534
    assert (alloc_dir / "alloc" / "data" / "written").read_text() == "shared\n"
    assert not Path("/etc/corral-exec-test").exists() and not Path("/corral-exec-test").exists()


def test_a_task_allocating_past_its_memory_is_oom_killed_and_says_so(cluster: Cluster) -> None:
    hog = 'x=0123456789; while true; do x="$x$x"; done'
    cluster.register(exec_job("hog", hog, MemoryMB=32))
    assert wait_for(lambda: status_of(cluster, "hog") == ["failed"], 90), cluster.allocs("hog")
    events = only_alloc(cluster, "hog")["TaskStates"]["t"]["Events"]
    terminated = [e for e in events if e["Type"] == "Terminated"]
    assert terminated and terminated[-1]["ExitCode"] == 137
    assert terminated[-1]["DisplayMessage"] == 'Exit Code: 137, Exit Message: "OOM Killed"'
    assert terminated[-1]["Details"]["oom_killed"] == "true"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")
def test_cores_are_reserved_whole_pinned_and_a_node_without_free_cores_is_not_chosen(
    cluster: Cluster, parent: str
) -> None:
    script = "echo cores=$NOMAD_CPU_CORES limit=$NOMAD_CPU_LIMIT; grep Cpus_allowed_list /proc/self/status; sleep 600"
    cluster.register(exec_job("pinned", script, kind="service", Cores=2))
    assert wait_for(lambda: status_of(cluster, "pinned") == ["running"], 60), cluster.allocs("pinned")
    alloc = only_alloc(cluster, "pinned")
    cpu = alloc["AllocatedResources"]["Tasks"]["t"]["Cpu"]
    assert cpu["ReservedCores"] == [0, 1]
    node = cluster.http.get(f"/v1/node/{alloc['NodeID']}").json()
    per_core = node["NodeResources"]["Cpu"]["CpuShares"] // int(node["Attributes"]["cpu.numcores"])
    assert cpu["CpuShares"] == 2 * per_core
    assert wait_for(lambda: "Cpus_allowed_list" in stdout(cluster, alloc["ID"]), 30)
    lines = stdout(cluster, alloc["ID"]).splitlines()
    assert lines[0] == f"cores=0-1 limit={2 * per_core}"
    assert lines[1].split() == ["Cpus_allowed_list:", "0-1"]
    group = ROOT / "cpuset" / parent / f"{alloc['ID']}.t"
    assert (group / "cpuset.cpus").read_text().strip() == "0-1"
    # Both cores are taken: a job asking for one more is not placed anywhere.
    cluster.register(exec_job("more", "true", Cores=1))
    cluster.settle()
    assert cluster.allocs("more") == []
    evaluations = cluster.http.get("/v1/job/more/evaluations").json()
    failed = [e["FailedTGAllocs"]["g"] for e in evaluations if e.get("FailedTGAllocs")]
    assert failed and failed[0]["DimensionExhausted"] == {"cores": 1}


SCRIPT_CHECK_JOB = """
job "checked" {
  type = "service"
  group "g" {
    ephemeral_disk { size = 10 }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "touch /local/ready; exec sleep 600"]
      }
      service {
        name     = "checked"
        provider = "nomad"
        check {
          name     = "inside"
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "echo user=$(id -un) procs=$(ls /proc | grep -c '^[0-9][0-9]*$'); test -f /local/ready"]
          interval = "1s"
          timeout  = "5s"
        }
        check {
          name     = "missing"
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "test -f /local/absent"]
          interval = "1s"
          timeout  = "5s"
        }
      }
      resources { memory = 64 }
    }
  }
}
"""


def test_script_checks_of_an_exec_task_run_inside_it_as_its_user(cluster: Cluster) -> None:
    parsed = cluster.http.put("/v1/jobs/parse", json={"JobHCL": SCRIPT_CHECK_JOB})
    assert parsed.status_code == 200, parsed.text
    assert cluster.http.put("/v1/jobs", json={"Job": parsed.json()}).status_code == 200
    assert wait_for(lambda: status_of(cluster, "checked") == ["running"], 60), cluster.allocs("checked")
    alloc_id = cluster.allocs("checked")[0]["ID"]

    def results() -> dict[str, dict[str, Any]]:
        answer = cluster.http.get(f"/v1/client/allocation/{alloc_id}/checks")
        return {c["Check"]: c for c in answer.json().values()} if answer.status_code == 200 else {}

    assert wait_for(lambda: results().get("inside", {}).get("Status") == "success", 60), results()
    inside = results()["inside"]
    # Run in the task's PID namespace as nobody: the task's sleep, this check's shell, ls and
    # grep, and at times the other check's shell and test (the host has hundreds).
    user, procs = inside["Output"].split()
    assert user == "user=nobody" and int(procs.removeprefix("procs=")) <= 8
    assert wait_for(lambda: results().get("missing", {}).get("Status") == "failure", 30), results()
