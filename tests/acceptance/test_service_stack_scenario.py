"""Issue 39's end-to-end scenario as one test, on a real `corral agent -dev -acl-enabled`:

- variable `nomad/jobs/web` holds `greeting = "hello"`;
- job `web` runs 2 raw_exec instances of a tiny Python HTTP server, registered as service `web`
  (provider nomad) with an HTTP check on a dynamic port; their template renders the greeting and
  the addresses of the `web` instances into local/app.conf (read as the task's workload
  identity), with change_mode restart;
- the file holds both; /v1/service/web lists 2 instances whose checks pass;
- `corral var put` of a new greeting re-renders the file and restarts each task once (the time it
  takes is printed);
- the task's workload identity reads its own variable and is refused another job's."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import CORRAL, Corral, CorralFactory, free_port, wait_for, wait_healthy

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(900)]

# Before serving, the task asks the API for its own job's variable and another job's with its
# workload identity (NOMAD_TOKEN) and keeps both statuses in local/identity for the test to read.
# The script comes from a second template (noop: it never changes).
PROBE = """
import os, pathlib, urllib.error, urllib.request
def get(path):
    request = urllib.request.Request(os.environ["ADDR"] + path, headers={"X-Nomad-Token": os.environ["NOMAD_TOKEN"]})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(answer.status)
    except urllib.error.HTTPError as err:
        return str(err.code)
pathlib.Path("local/identity").write_text(get("/v1/var/nomad/jobs/web") + " " + get("/v1/var/nomad/jobs/db"))
"""

WEB_JOB = """
job "web" {
  datacenters = ["*"]
  update {
    min_healthy_time = "1s"
    healthy_deadline = "60s"
  }
  group "web" {
    count = 2
    network { port "http" {} }
    restart {
      attempts = 3
      delay    = "1s"
    }
    service {
      name     = "web"
      provider = "nomad"
      port     = "http"
      check {
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "srv" {
      driver = "raw_exec"
      identity { env = true }
      env { ADDR = "API_BASE" }
      config {
        command = "/bin/sh"
        args    = ["-c", "python3 local/probe.py && exec python3 -m http.server ${NOMAD_PORT_http}"]
      }
      template {
        data        = <<EOT
PROBE
EOT
        destination = "local/probe.py"
        change_mode = "noop"
      }
      template {
        data        = <<EOT
greeting = {{ with nomadVar "nomad/jobs/web" }}{{ .greeting }}{{ end }}
{{ range nomadService "web" }}peer = {{ .Address }}:{{ .Port }}
{{ end }}
EOT
        destination = "local/app.conf"
        change_mode = "restart"
        splay       = "0s"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
"""


@pytest.fixture
def agent(corral: CorralFactory) -> Iterator[tuple[str, Corral]]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = corral(["agent", "-dev", "-acl-enabled"], env={"CORRAL_BIND": f"127.0.0.1:{port}"})
    try:
        wait_healthy(base, process)
        yield base, process
    finally:
        process.process.send_signal(signal.SIGINT)
        process.wait(60)


def _running(http: httpx.Client) -> list[dict[str, Any]]:
    allocs: list[dict[str, Any]] = http.get("/v1/job/web/allocations").json()
    return [a for a in allocs if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"]


def _file(http: httpx.Client, alloc_id: str, path: str) -> str:
    answer = http.get(f"/v1/client/fs/cat/{alloc_id}", params={"path": path})
    return answer.text if answer.status_code == 200 else ""


def _restarts(http: httpx.Client, alloc_id: str) -> int:
    state = http.get(f"/v1/allocation/{alloc_id}").json()["TaskStates"]["srv"]
    return int(state.get("Restarts") or 0)


def _checks_pass(http: httpx.Client, alloc_id: str) -> bool:
    answer = http.get(f"/v1/client/allocation/{alloc_id}/checks")
    found = list(answer.json().values()) if answer.status_code == 200 else []
    return bool(found) and all(c["Status"] == "success" for c in found)


def test_variables_services_checks_templates_and_identity_together(agent: tuple[str, Corral]) -> None:
    base, process = agent
    management = httpx.post(f"{base}/v1/acl/bootstrap", headers={"Host": "127.0.0.1"}).json()["SecretID"]
    http = httpx.Client(base_url=base, headers={"Host": "127.0.0.1", "X-Nomad-Token": management}, timeout=30)
    with http:
        for path, items in (("nomad/jobs/web", {"greeting": "hello"}), ("nomad/jobs/db", {"password": "p"})):
            assert http.put(f"/v1/var/{path}", json={"Items": items}).status_code == 200
        hcl = WEB_JOB.replace("PROBE", PROBE).replace("API_BASE", base)
        parsed = http.put("/v1/jobs/parse", json={"JobHCL": hcl, "Canonicalize": True})
        assert parsed.status_code == 200, parsed.text
        answer = http.put("/v1/jobs", json={"Job": parsed.json()})
        assert answer.status_code == 200 and answer.json()["Warnings"] == "", answer.text

        # Two instances, registered, checks passing; each one's file holds the greeting and both.
        def registered() -> list[dict[str, Any]]:
            return list(http.get("/v1/service/web").json())

        assert wait_for(lambda: len(_running(http)) == 2 and len(registered()) == 2, 180), process.output
        allocs = _running(http)
        peers = sorted(f"peer = {r['Address']}:{r['Port']}" for r in registered())
        assert {r["AllocID"] for r in registered()} == {a["ID"] for a in allocs}
        assert wait_for(lambda: all(_checks_pass(http, a["ID"]) for a in allocs), 90)

        def conf(alloc_id: str) -> list[str]:
            lines = [line for line in _file(http, alloc_id, "srv/local/app.conf").splitlines() if line]
            return lines[:1] + sorted(lines[1:])

        def settled(greeting: str) -> bool:
            return all(conf(a["ID"]) == [f"greeting = {greeting}", *peers] for a in allocs)

        assert wait_for(lambda: settled("hello"), 90), [conf(a["ID"]) for a in allocs]
        # The file follows the catalog (each instance re-renders when the other registers); once
        # it holds both, the running tasks stay up while nothing changes.
        before: dict[str, int] = {}

        def stable() -> bool:
            before.update({a["ID"]: _restarts(http, a["ID"]) for a in allocs})
            time.sleep(3)
            return {a["ID"]: _restarts(http, a["ID"]) for a in allocs} == before and _checks_pass_all()

        def _checks_pass_all() -> bool:
            return all(_checks_pass(http, a["ID"]) for a in allocs)

        assert wait_for(stable, 120), before

        # The task's workload identity: its own job's variable yes, another job's no.
        assert all(_file(http, a["ID"], "srv/local/identity") == "200 403" for a in allocs)

        # `corral var put` of a new greeting: re-rendered and restarted once, timed.
        # (run directly: the process fixture names its log after the arguments, and a path has '/')
        env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": base, "CORRAL_TOKEN": management}
        invoked = time.monotonic()
        put = subprocess.run(
            [CORRAL, "var", "put", "-force", "nomad/jobs/web", "greeting=bonjour"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        began = time.monotonic()
        assert put.returncode == 0, put.stderr

        def restarted() -> bool:
            return settled("bonjour") and all(_restarts(http, a["ID"]) == before[a["ID"]] + 1 for a in allocs)

        assert wait_for(restarted, 60), [(conf(a["ID"]), _restarts(http, a["ID"])) for a in allocs]
        done = time.monotonic()
        print(
            f"\nvar put written -> both instances re-rendered and restarted once: {done - began:.2f} s "
            f"({done - invoked:.2f} s from invoking the CLI)"
        )
        for alloc in allocs:
            events = http.get(f"/v1/allocation/{alloc['ID']}").json()["TaskStates"]["srv"]["Events"]
            assert any(e["DisplayMessage"] == "Template with change_mode restart re-rendered" for e in events)
        assert wait_for(lambda: all(_checks_pass(http, a["ID"]) for a in allocs), 90)
        assert len(registered()) == 2
