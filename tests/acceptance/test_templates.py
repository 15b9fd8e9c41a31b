"""Templates rendered by a real `corral agent -dev`: a raw_exec task reads the file its
template rendered into local/ before it started, and the environment its env template fed;
a template reading a Nomad variable re-renders and restarts the task when the variable changes
(skipped while the servers have no /v1/var routes)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import Corral, CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance

READER = """
job "reader" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat local/app.conf; echo; echo GREET=$GREET SHARED=$SHARED"]
      }
      env { SHARED = "from-env-block" }
      template {
        data        = "hello {{ env \\"NOMAD_ALLOC_ID\\" }}"
        destination = "local/app.conf"
      }
      template {
        data        = "GREET=hi-{{ env \\"NOMAD_TASK_NAME\\" }}\\nSHARED=from-template\\n"
        destination = "secrets/app.env"
        env         = true
      }
    }
  }
}
"""

WEB = """
job "web" {
  group "g" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \\"conf: $(cat local/app.conf)\\"; exec sleep 3600"]
      }
      template {
        data        = "{{ with nomadVar \\"nomad/jobs/web\\" }}{{ .greeting }}{{ end }}"
        destination = "local/app.conf"
        change_mode = "restart"
        splay       = "0s"
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def agent(module_corral: CorralFactory) -> Iterator[tuple[Corral, httpx.Client]]:
    """One dev agent for both tests: each runs a job of its own name."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = module_corral(["agent", "-dev"], env={"CORRAL_BIND": f"127.0.0.1:{port}"})
    http = httpx.Client(base_url=base, headers={"Host": "127.0.0.1"}, timeout=30)
    try:
        wait_healthy(base, process)
        yield process, http
    finally:
        http.close()
        process.process.send_signal(signal.SIGINT)
        process.wait(60)


def register(http: httpx.Client, text: str) -> None:
    parsed = http.put("/v1/jobs/parse", json={"JobHCL": text, "Canonicalize": True})
    assert parsed.status_code == 200, parsed.text
    answer = http.put("/v1/jobs", json={"Job": parsed.json()})
    assert answer.status_code == 200, answer.text
    assert "template" not in answer.json().get("Warnings", ""), answer.json()


def allocs(http: httpx.Client, job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = http.get(f"/v1/job/{job}/allocations").json()
    return found


def stdout(http: httpx.Client, alloc_id: str, task: str) -> str:
    answer = http.get(f"/v1/client/fs/logs/{alloc_id}", params={"task": task, "type": "stdout", "plain": "true"})
    return answer.text if answer.status_code == 200 else ""


def test_template_renders_before_the_task_starts_and_feeds_its_env(agent: tuple[Corral, httpx.Client]) -> None:
    _, http = agent
    register(http, READER)
    assert wait_for(lambda: [a["ClientStatus"] for a in allocs(http, "reader")] == ["complete"], 120)
    (alloc,) = allocs(http, "reader")
    lines = stdout(http, alloc["ID"], "t").splitlines()
    assert lines == [f"hello {alloc['ID']}", "GREET=hi-t SHARED=from-template"]


def test_variable_change_re_renders_and_restarts_the_task(agent: tuple[Corral, httpx.Client]) -> None:
    _, http = agent
    put = http.put("/v1/var/nomad/jobs/web", json={"Path": "nomad/jobs/web", "Items": {"greeting": "hello"}})
    assert put.status_code == 200, put.text
    register(http, WEB)

    def log() -> str:
        found = allocs(http, "web")
        return stdout(http, found[0]["ID"], "web") if found else ""

    assert wait_for(lambda: "conf: hello" in log(), 120), log()
    put = http.put("/v1/var/nomad/jobs/web", json={"Path": "nomad/jobs/web", "Items": {"greeting": "bonjour"}})
    assert put.status_code == 200, put.text
    assert wait_for(lambda: "conf: bonjour" in log(), 60), log()
    (alloc,) = allocs(http, "web")

    def task_state() -> dict[str, Any]:
        found: dict[str, Any] = http.get(f"/v1/allocation/{alloc['ID']}").json()["TaskStates"]["web"]
        return found

    # The task prints the new text before the client reports its restart to the servers.
    assert wait_for(lambda: task_state()["Restarts"] == 1, 30), task_state()
    state = task_state()
    assert state["Restarts"] == 1
    assert any(e["DisplayMessage"] == "Template with change_mode restart re-rendered" for e in state["Events"])
    http.delete("/v1/job/web")
