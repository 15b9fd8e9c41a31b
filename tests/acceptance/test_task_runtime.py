"""The task runtime as Nomad's client builds it, seen from inside real `raw_exec` tasks run by a
real `corral client`: the environment (NOMAD_* variables, merged meta, ports; none of the
client's own variables), `${…}` interpolation in args and env, a dispatched job's payload file,
lifecycle hook order and failure rules, and kill_signal/kill_timeout on stop."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

ENV_JOB = """
job "envcheck" {
  type        = "batch"
  datacenters = ["dc7"]
  meta {
    owner = "job-owner"
    tier  = "job"
  }
  group "g" {
    meta { tier = "group" }
    network { port "http" {} }
    task "show" {
      driver = "raw_exec"
      meta { tier = "task" }
      env { GREETING = "hello from ${node.unique.name} in ${NOMAD_DC}" }
      config {
        command = "/bin/sh"
        args = [
          "-c",
          "echo ARGS ${NOMAD_ALLOC_INDEX} ${node.unique.name} $0 ${meta.rack} $1 $${NOMAD_TASK_NAME}; env",
          "${attr.kernel.name}",
          "${NOMAD_META_owner}",
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
    """One cluster and one client, c1 in dc7 with meta rack=r9, for every test here: each test
    runs jobs of its own (the others have no datacenters, Nomad's default "*": c1 as well)."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    running.client("c1", "-dc", "dc7", "--meta", "rack=r9")
    yield running
    running.close()


def register_hcl(cluster: Cluster, text: str) -> dict[str, Any]:
    parsed = cluster.http.put("/v1/jobs/parse", json={"JobHCL": text, "Canonicalize": True})
    assert parsed.status_code == 200, parsed.text
    job: dict[str, Any] = parsed.json()
    cluster.register(job)
    return job


def log(cluster: Cluster, alloc_id: str, task: str, kind: str = "stdout") -> str:
    answer = cluster.http.get(f"/v1/client/fs/logs/{alloc_id}", params={"task": task, "type": kind, "plain": "true"})
    return answer.text if answer.status_code == 200 else ""


def only_alloc(cluster: Cluster, job_id: str) -> dict[str, Any]:
    (alloc,) = cluster.allocs(job_id)
    return alloc


def test_task_sees_nomads_environment_and_interpolated_args_and_not_the_clients(cluster: Cluster) -> None:
    assert "CORRAL_DATABASE_URL" in cluster.env  # the client runs with it in its environment
    register_hcl(cluster, ENV_JOB)
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("envcheck")] == ["complete"], 60)
    alloc = only_alloc(cluster, "envcheck")
    lines = log(cluster, alloc["ID"], "show").splitlines()
    assert lines[0] == "ARGS 0 c1 linux r9 job-owner show"
    env = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    task_dir = cluster.workdir / "c1" / ".corral-client" / "allocs" / alloc["ID"] / "show"
    port = next(p for p in alloc["AllocatedResources"]["Shared"]["Ports"] if p["Label"] == "http")["Value"]
    expected = {
        "NOMAD_ALLOC_ID": alloc["ID"],
        "NOMAD_ALLOC_NAME": "envcheck.g[0]",
        "NOMAD_ALLOC_INDEX": "0",
        "NOMAD_ALLOC_DIR": str(task_dir.parent / "alloc"),
        "NOMAD_TASK_NAME": "show",
        "NOMAD_TASK_DIR": str(task_dir / "local"),
        "NOMAD_SECRETS_DIR": str(task_dir / "secrets"),
        "NOMAD_GROUP_NAME": "g",
        "NOMAD_JOB_ID": "envcheck",
        "NOMAD_JOB_NAME": "envcheck",
        "NOMAD_NAMESPACE": "default",
        "NOMAD_REGION": "global",
        "NOMAD_DC": "dc7",
        "NOMAD_CPU_LIMIT": "100",
        "NOMAD_MEMORY_LIMIT": "64",
        "NOMAD_META_owner": "job-owner",
        "NOMAD_META_OWNER": "job-owner",
        "NOMAD_META_tier": "task",
        "NOMAD_META_TIER": "task",
        "NOMAD_PORT_http": str(port),
        "NOMAD_HOST_PORT_http": str(port),
        "GREETING": "hello from c1 in dc7",
        "HOME": str(task_dir / "local"),
        "TMPDIR": str(task_dir / "tmp"),
    }
    assert {k: env.get(k) for k in expected} == expected
    assert env["NOMAD_ADDR_http"] == f"{env['NOMAD_IP_http']}:{port}"
    assert "/usr/bin" in env["PATH"].split(":")
    leaked = sorted(k for k in env if k.startswith("CORRAL_") or k in ("VIRTUAL_ENV", "PYTHONPATH", "UV"))
    assert leaked == [], leaked
    for directory in ("alloc/data", "alloc/logs", "alloc/tmp", "show/local", "show/secrets", "show/tmp"):
        assert (task_dir.parent / directory).is_dir(), directory


LIFECYCLE_JOB = """
job "pipeline" {
  type = "batch"
  parameterized { payload = "required" }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "setup" {
      driver = "raw_exec"
      lifecycle { hook = "prestart" }
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 1; echo setup >> $${NOMAD_ALLOC_DIR}/data/order"]
      }
    }
    task "proxy" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo proxy >> $${NOMAD_ALLOC_DIR}/data/order; exec sleep 300"]
      }
    }
    task "main" {
      driver = "raw_exec"
      dispatch_payload { file = "input/job.txt" }
      config {
        command = "/bin/sh"
        args = [
        "-c",
          "echo main-start >> $0; sleep 2; echo \\"payload $(cat local/input/job.txt)\\" >> $0",
          "${NOMAD_ALLOC_DIR}/data/order",
        ]
      }
    }
    task "announce" {
      driver = "raw_exec"
      lifecycle { hook = "poststart" }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo poststart >> $${NOMAD_ALLOC_DIR}/data/order"]
      }
    }
    task "cleanup" {
      driver = "raw_exec"
      lifecycle { hook = "poststop" }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo poststop >> $${NOMAD_ALLOC_DIR}/data/order; cat $${NOMAD_ALLOC_DIR}/data/order"]
      }
    }
  }
}
"""


def dispatch(cluster: Cluster, job_id: str, payload: bytes) -> str:
    answer = cluster.http.put(f"/v1/job/{job_id}/dispatch", json={"Payload": base64.b64encode(payload).decode()})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["DispatchedJobID"])


def test_lifecycle_hooks_run_in_nomads_order_and_the_payload_is_in_local(cluster: Cluster) -> None:
    register_hcl(cluster, LIFECYCLE_JOB)
    child = dispatch(cluster, "pipeline", b"frame 7")
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs(child)] == ["complete"], 90)
    alloc = only_alloc(cluster, child)
    order = log(cluster, alloc["ID"], "cleanup").splitlines()
    assert order.index("setup") < order.index("main-start"), order  # main waited for setup to finish
    assert {"proxy", "poststart", "payload frame 7"} <= set(order), order
    assert order[-1] == "poststop", order  # poststop ran once the rest was dead
    states = alloc["TaskStates"]
    assert all(s["State"] == "dead" and not s["Failed"] for s in states.values()), states
    started = {name: s["StartedAt"] for name, s in states.items()}
    finished = {name: s["FinishedAt"] for name, s in states.items()}
    assert started["proxy"] <= started["main"] and finished["setup"] <= started["main"]
    assert started["announce"] >= started["main"]
    assert started["cleanup"] >= max(f for name, f in finished.items() if name != "cleanup")
    assert "Main Tasks Dead" in [e["Type"] for e in states["proxy"]["Events"]]  # the sidecar is stopped


def test_failed_prestart_task_fails_the_allocation_main_never_starts_poststop_runs(cluster: Cluster) -> None:
    failing = LIFECYCLE_JOB.replace('"sleep 1; echo setup', '"exit 3; echo setup').replace("pipeline", "broken")
    register_hcl(cluster, failing)
    child = dispatch(cluster, "broken", b"x")
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs(child)] == ["failed"], 90)
    alloc = only_alloc(cluster, child)
    states = alloc["TaskStates"]
    assert states["setup"]["Failed"] is True
    assert "Started" not in [e["Type"] for e in states["main"]["Events"]]
    assert states["cleanup"]["State"] == "dead" and "poststop" in log(cluster, alloc["ID"], "cleanup")


def test_stop_sends_kill_signal_and_force_kills_after_kill_timeout(cluster: Cluster) -> None:
    graceful = "trap 'echo got-term; echo bye; exit 0' TERM; echo ready; while :; do sleep 0.1; done"
    stubborn = "trap 'echo got-int' INT; echo ready; while :; do sleep 0.1; done; echo never"
    tasks = [
        {
            "Name": "graceful",
            "Driver": "raw_exec",
            "KillSignal": "SIGTERM",
            "KillTimeout": 30_000_000_000,
            "Config": {"command": "/bin/sh", "args": ["-c", graceful]},
        },
        {
            "Name": "stubborn",
            "Driver": "raw_exec",
            "KillTimeout": 1_000_000_000,  # no kill_signal: Nomad's default, SIGINT
            "Config": {"command": "/bin/sh", "args": ["-c", stubborn]},
        },
    ]
    cluster.register({"ID": "stoppable", "TaskGroups": [{"Name": "g", "Tasks": tasks}]})
    alloc_id = ""

    def both_ready() -> bool:
        nonlocal alloc_id
        allocs = cluster.allocs("stoppable")
        alloc_id = allocs[0]["ID"] if allocs else ""
        return bool(alloc_id) and all(log(cluster, alloc_id, t).startswith("ready") for t in ("graceful", "stubborn"))

    assert wait_for(both_ready, 60)
    cluster.http.delete("/v1/job/stoppable").raise_for_status()
    assert wait_for(lambda: cluster.allocs("stoppable")[0]["ClientStatus"] == "complete", 60)
    assert log(cluster, alloc_id, "graceful") == "ready\ngot-term\nbye\n"
    assert log(cluster, alloc_id, "stubborn").startswith("ready\n")
    assert "never" not in log(cluster, alloc_id, "stubborn")
    states = cluster.allocs("stoppable")[0]["TaskStates"]
    events = {name: {e["Type"]: e for e in state["Events"]} for name, state in states.items()}
    assert (events["graceful"]["Killing"]["KillSignal"], events["stubborn"]["Killing"]["KillSignal"]) == (
        "SIGTERM",
        "SIGINT",
    )
    assert events["stubborn"]["Killing"]["KillTimeout"] == 1_000_000_000
    # The stubborn task ignored SIGINT: it was killed by force, and not before its kill_timeout.
    waited = events["stubborn"]["Killed"]["Time"] - events["stubborn"]["Killing"]["Time"]
    assert waited >= 1_000_000_000
