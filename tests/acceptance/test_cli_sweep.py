"""Commands and routes that need real tasks, against one dev agent shared by the module:
`job dispatch -wait` (exit 0 when the child's allocations complete, 2 when one fails),
`action` (a job's action run in its running task, its output and exit code),
`alloc checks` and GET /v1/allocation/:id/checks (a Nomad HTTP check run by the client), and
GET /v1/client/allocation/:id/gc (the client destroys a terminal allocation, refuses a live one)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import CORRAL, Corral, free_port, wait_for, wait_healthy

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(600)]

DISPATCHED = """
job "exits" {
  type        = "batch"
  datacenters = ["*"]
  parameterized {
    meta_required = ["code"]
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exit ${NOMAD_META_code}"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
"""

CHECKED = """
job "checked" {
  datacenters = ["*"]
  group "web" {
    network { port "http" {} }
    service {
      name     = "checked"
      provider = "nomad"
      port     = "http"
      check {
        name     = "root"
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "srv" {
      driver = "raw_exec"
      action "hello" {
        command = "/bin/sh"
        args    = ["-c", "echo hello from $NOMAD_TASK_NAME; exit 3"]
      }
      config {
        command = "python3"
        args    = ["-m", "http.server", "${NOMAD_PORT_http}"]
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
"""


@dataclass(frozen=True)
class Agent:
    process: Corral
    base: str
    home: Path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CORRAL_ADDR": self.base}
        return subprocess.run([CORRAL, *args], env=env, cwd=self.home, capture_output=True, text=True, timeout=300)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.base}{path}", timeout=30)

    def run(self, name: str, text: str) -> None:
        (self.home / name).write_text(text)
        ran = self.cli("job", "run", "-detach", name)
        assert ran.returncode == 0, ran.stdout + ran.stderr

    def allocs(self, job_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/v1/job/{job_id}/allocations").json())


@pytest.fixture(scope="module")
def agent() -> Iterator[Agent]:
    home = Path(tempfile.mkdtemp(prefix="corral-cli-sweep-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update({"CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_LOG_FORMAT": "console"})
    process = Corral(["agent", "-dev"], home, env)
    try:
        wait_healthy(base, process)
        ready = lambda: [n["Status"] for n in httpx.get(f"{base}/v1/nodes", timeout=10).json()] == ["ready"]  # noqa: E731
        assert wait_for(ready, 120), process.output
        yield Agent(process, base, home)
    finally:
        process.process.send_signal(signal.SIGINT)  # the dev client destroys its allocations
        try:
            process.wait(60)
        finally:
            process.kill_all()
            shutil.rmtree(home, ignore_errors=True)


def test_dispatch_wait_exits_with_the_childs_outcome(agent: Agent) -> None:
    agent.run("exits.nomad.hcl", DISPATCHED)
    ok = agent.cli("job", "dispatch", "-wait", "-meta", "code=0", "exits")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Monitoring allocations for job" in ok.stdout and "Complete" in ok.stdout
    failed = agent.cli("job", "dispatch", "-wait", "-meta", "code=3", "exits")
    assert failed.returncode == 2, failed.stdout + failed.stderr


def test_client_gc_destroys_a_terminal_allocation_only(agent: Agent) -> None:
    agent.run("exits.nomad.hcl", DISPATCHED)  # unchanged if an earlier test registered it
    done = agent.cli("job", "dispatch", "-wait", "-meta", "code=0", "exits")
    assert done.returncode == 0, done.stdout + done.stderr
    child = next(line.split("= ", 1)[1] for line in done.stdout.splitlines() if line.startswith("Dispatched Job ID"))
    (alloc,) = agent.allocs(child)
    assert agent.get(f"/v1/client/fs/ls/{alloc['ID']}").status_code == 200
    assert agent.get(f"/v1/client/allocation/{alloc['ID']}/gc").status_code == 200
    assert agent.get(f"/v1/client/fs/ls/{alloc['ID']}").status_code != 200  # its directory is gone

    agent.run("checked.nomad.hcl", CHECKED)
    assert wait_for(lambda: [a["ClientStatus"] for a in agent.allocs("checked")] == ["running"], 120)
    (live,) = agent.allocs("checked")
    refused = agent.get(f"/v1/client/allocation/{live['ID']}/gc")
    assert refused.status_code == 404 and "Unknown allocation" in refused.text


def test_alloc_checks_shows_the_clients_results(agent: Agent) -> None:
    agent.run("checked.nomad.hcl", CHECKED)
    assert wait_for(lambda: [a["ClientStatus"] for a in agent.allocs("checked")] == ["running"], 120)
    (alloc,) = agent.allocs("checked")

    def passing() -> bool:
        found = agent.get(f"/v1/allocation/{alloc['ID']}/checks")
        return found.status_code == 200 and [c["Status"] for c in found.json().values()] == ["success"]

    assert wait_for(passing, 60), agent.get(f"/v1/allocation/{alloc['ID']}/checks").text
    shown = agent.cli("alloc", "checks", alloc["ID"][:8])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "Status of 1 Nomad Service Checks"
    fields = {line.split("=", 1)[0].strip(): line.split("=", 1)[1].strip() for line in lines[2:] if "=" in line}
    assert fields["ID"] in agent.get(f"/v1/allocation/{alloc['ID']}/checks").json()
    assert fields["Name"] == "root" and fields["Group"]
    assert fields["Task"] == "(group)" and fields["Service"] == "checked" and fields["Status"] == "success"
    assert fields["Mode"] == "healthiness" and fields["StatusCode"] == "200"


def test_action_runs_in_the_task_with_its_exit_code(agent: Agent) -> None:
    agent.run("checked.nomad.hcl", CHECKED)
    assert wait_for(lambda: [a["ClientStatus"] for a in agent.allocs("checked")] == ["running"], 120)
    listed = agent.get("/v1/job/checked/actions").json()
    assert [(a["Name"], a["TaskName"], a["TaskGroupName"]) for a in listed] == [("hello", "srv", "web")]
    ran = agent.cli("action", "-job", "checked", "-group", "web", "-task", "srv", "-i=false", "hello")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "hello from srv"
    (alloc,) = agent.allocs("checked")
    by_alloc = agent.cli("job", "action", "-job", "checked", "-alloc", alloc["ID"][:8], "-i=false", "hello")
    assert by_alloc.returncode == 3 and by_alloc.stdout.strip() == "hello from srv", by_alloc.stderr
    missing = agent.cli("action", "-job", "checked", "-alloc", alloc["ID"], "-i=false", "reboot")
    assert missing.returncode == 1 and "404" in missing.stderr and "reboot" in missing.stderr
