"""The docker driver for real (issue 38): `corral agent -dev` pointed at a private Docker daemon
(DOCKER_HOST), job files run with `corral job run`, inspected with `alloc status`, `alloc logs`
and `alloc exec`; a service in bridge mode answers on its host port, a task over its memory is
OOM-killed and says so, stopping a job removes its container; a client whose daemon goes down
reports the driver unhealthy and gets no docker work."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import httpx
import pytest

from client.drivers import Docker, TaskSpec
from client.drivers.docker_pause import DEFAULT_INFRA_IMAGE
from tests.support.cluster import Cluster
from tests.support.cni_cleanup import network_traces
from tests.support.dockerd import Dockerd, private_dockerd
from tests.support.processes import CORRAL, Corral, CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance

WEB = """
job "web" {
  datacenters = ["*"]
  group "g" {
    network {
      mode = "bridge"
      port "http" { to = 8080 }
    }
    task "web" {
      driver = "docker"
      config {
        image   = "IMAGE"
        command = "sh"
        args    = ["-c", "env > /local/index.html; echo serving; exec httpd -f -p 8080 -h /local"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
"""

HOG = """
job "hog" {
  datacenters = ["*"]
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    reschedule { attempts = 0 }
    task "hog" {
      driver = "docker"
      config {
        image   = "IMAGE"
        command = "sh"
        args    = ["-c", "echo filling; x=a; while true; do x=$x$x; done"]
      }
      resources { memory = 32 }
    }
  }
}
"""

TALK = """
job "talk" {
  datacenters = ["*"]
  type = "batch"
  group "g" {
    task "talk" {
      driver = "docker"
      config {
        image   = "IMAGE"
        command = "sh"
        args    = ["-c", "echo to-stdout; echo to-stderr >&2; id -u"]
      }
      user = "nobody"
    }
  }
}
"""

CHECKED = """
job "checked" {
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image   = "IMAGE"
        command = "sh"
        args    = ["-c", "hostname > /tmp/inside; exec sleep 600"]
      }
      service {
        name     = "checked"
        provider = "nomad"
        check {
          name     = "inside"
          type     = "script"
          command  = "sh"
          args     = ["-c", "echo seen=$(cat /tmp/inside) host=$(hostname)"]
          interval = "1s"
          timeout  = "5s"
        }
        check {
          name     = "slow"
          type     = "script"
          command  = "sleep"
          args     = ["30"]
          interval = "2s"
          timeout  = "1s"
        }
      }
      resources { memory = 64 }
    }
  }
}
"""


class Agent:
    def __init__(self, process: Corral, base: str, home: Path) -> None:
        self.process, self.base, self.home = process, base, home
        self.env = {**os.environ, "CORRAL_ADDR": base, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CORRAL, *args], env=self.env, cwd=self.home, input=stdin, capture_output=True, text=True, timeout=120
        )

    def run_file(self, name: str, text: str, image: str) -> None:
        (self.home / name).write_text(text.replace("IMAGE", image))
        ran = self.cli("job", "run", "-detach", name)
        assert ran.returncode == 0, ran.stdout + ran.stderr

    def allocs(self, job_id: str) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.base}/v1/job/{job_id}/allocations", timeout=10).json())

    def alloc(self, alloc_id: str) -> dict[str, Any]:
        return dict(httpx.get(f"{self.base}/v1/allocation/{alloc_id}", timeout=10).json())

    def status_is(self, job_id: str, status: str) -> bool:
        return [a["ClientStatus"] for a in self.allocs(job_id)] == [status]


@contextlib.contextmanager
def dev_bridge_traces() -> Iterator[None]:
    """The dev agent's bridge-mode groups attach to the default `nomad` bridge: removed after,
    with the chains and namespaces made meanwhile, unless the host had that bridge before."""
    if Path("/sys/class/net/nomad").exists():
        yield
        return
    with network_traces("nomad"):
        yield


@pytest.fixture(scope="module")
def agent(dockerd: Dockerd) -> Iterator[Agent]:
    with dev_bridge_traces():
        yield from _agent(dockerd)


def _agent(dockerd: Dockerd) -> Iterator[Agent]:
    home = Path(tempfile.mkdtemp(prefix="corral-docker-agent-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update({"CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_LOG_FORMAT": "console", "DOCKER_HOST": dockerd.endpoint})
    process = Corral(["agent", "-dev"], home, env)
    try:
        wait_healthy(base, process)
        running = Agent(process, base, home)

        def docker_healthy() -> bool:
            nodes = httpx.get(f"{base}/v1/nodes", timeout=10).json()
            if not nodes:
                return False
            node = httpx.get(f"{base}/v1/node/{nodes[0]['ID']}", timeout=10).json()
            return bool(node["Drivers"].get("docker", {}).get("Healthy")) and node["Status"] == "ready"

        assert wait_for(docker_healthy, 120), process.output
        yield running
    finally:
        process.process.send_signal(signal.SIGINT)  # the dev client destroys its allocations
        try:
            process.wait(60)
        finally:
            process.kill_all()
            shutil.rmtree(home, ignore_errors=True)


def containers_of(dockerd: Dockerd, alloc_id: str) -> list[dict[str, Any]]:
    """The allocation's containers as the daemon lists them (running or not)."""
    client = dockerd.client()
    try:
        return list(client.api.containers(all=True, filters={"label": f"com.hashicorp.nomad.alloc_id={alloc_id}"}))
    finally:
        client.close()


def test_the_dev_agent_says_docker_is_available_and_fingerprints_it(agent: Agent) -> None:
    assert "docker driver available: Docker 20.10" in agent.process.output or "docker driver available" in (
        agent.process.output
    ), agent.process.output
    node_id = httpx.get(f"{agent.base}/v1/nodes").json()[0]["ID"]
    node = httpx.get(f"{agent.base}/v1/node/{node_id}").json()
    assert node["Attributes"]["driver.docker"] == "1"
    assert node["Attributes"]["driver.docker.version"]
    assert "runc" in node["Attributes"]["driver.docker.runtimes"].split(",")
    assert node["Drivers"]["docker"]["Detected"] is True


def test_a_bridge_service_answers_on_its_host_port_execs_and_its_stop_removes_the_container(
    agent: Agent, dockerd: Dockerd
) -> None:
    agent.run_file("web.nomad.hcl", WEB, dockerd.image)
    assert wait_for(lambda: agent.status_is("web", "running"), 120), agent.process.output
    alloc = agent.alloc(agent.allocs("web")[0]["ID"])
    (port,) = alloc["AllocatedResources"]["Shared"]["Ports"]
    assert port["To"] == 8080
    node = httpx.get(f"{agent.base}/v1/node/{alloc['NodeID']}").json()
    host_ip = node["Attributes"]["unique.network.ip-address"]

    def page() -> str:
        try:
            answer = httpx.get(f"http://{host_ip}:{port['Value']}/index.html", timeout=5)
        except httpx.HTTPError:
            return ""
        return answer.text if answer.status_code == 200 else ""

    assert wait_for(lambda: "NOMAD_PORT_http" in page(), 60)
    env = dict(line.split("=", 1) for line in page().splitlines() if "=" in line)
    assert env["NOMAD_PORT_http"] == "8080" and env["NOMAD_ALLOC_PORT_http"] == "8080"
    assert env["NOMAD_HOST_PORT_http"] == str(port["Value"])
    assert env["NOMAD_ADDR_http"] == f"{host_ip}:{port['Value']}"
    assert (env["NOMAD_ALLOC_DIR"], env["NOMAD_TASK_DIR"], env["NOMAD_SECRETS_DIR"]) == ("/alloc", "/local", "/secrets")
    assert env["NOMAD_ALLOC_ID"] == alloc["ID"]

    # The task's container and the pause container that owns the group's namespace.
    listed, pause = sorted(containers_of(dockerd, alloc["ID"]), key=lambda c: c["Names"][0].startswith("/nomad_init_"))
    assert pause["Names"] == [f"/nomad_init_{alloc['ID']}"]
    client = dockerd.client()
    container = client.containers.get(listed["Id"])
    client.close()
    limits = container.attrs["HostConfig"]
    assert (limits["Memory"], limits["MemorySwap"], limits["CpuShares"]) == (64 << 20, 64 << 20, 100)
    assert container.labels["com.hashicorp.nomad.task_name"] == "web"

    executed = agent.cli("alloc", "exec", "-i=false", alloc["ID"][:8], "sh", "-c", "cat /local/index.html; exit 3")
    assert executed.returncode == 3 and "NOMAD_PORT_http=8080" in executed.stdout, executed.stderr
    piped = agent.cli("alloc", "exec", alloc["ID"][:8], "cat", stdin="through stdin\n")
    assert piped.stdout == "through stdin\n", piped.stderr

    following = Corral(["alloc", "logs", "-f", alloc["ID"][:8], "web"], agent.home, agent.env)
    try:
        assert wait_for(lambda: "serving" in following.output, 60), following.output
    finally:
        following.kill_all()

    stopped = agent.cli("job", "stop", "-detach", "web")
    assert stopped.returncode == 0, stopped.stderr
    assert wait_for(lambda: not containers_of(dockerd, alloc["ID"]), 60)
    assert wait_for(lambda: agent.status_is("web", "complete"), 60)


def test_a_task_past_its_memory_is_oom_killed_and_alloc_status_says_so(agent: Agent, dockerd: Dockerd) -> None:
    agent.run_file("hog.nomad.hcl", HOG, dockerd.image)
    assert wait_for(lambda: agent.status_is("hog", "failed"), 120), agent.process.output
    alloc = agent.allocs("hog")[0]
    state = agent.alloc(alloc["ID"])["TaskStates"]["hog"]
    terminated = next(e for e in state["Events"] if e["Type"] == "Terminated")
    assert terminated["ExitCode"] == 137 and terminated["Details"]["oom_killed"] == "true"
    status = agent.cli("alloc", "status", alloc["ID"][:8])
    assert status.returncode == 0 and "OOM Killed" in status.stdout and "Exit Code: 137" in status.stdout, status.stdout
    assert wait_for(lambda: not containers_of(dockerd, alloc["ID"]), 30)


def test_logs_reach_alloc_logs_and_the_task_runs_as_its_user(agent: Agent, dockerd: Dockerd) -> None:
    agent.run_file("talk.nomad.hcl", TALK, dockerd.image)
    assert wait_for(lambda: agent.status_is("talk", "complete"), 120), agent.process.output
    alloc_id = agent.allocs("talk")[0]["ID"]
    out = agent.cli("alloc", "logs", alloc_id[:8])
    assert out.stdout == "to-stdout\n65534\n", out.stderr
    err = agent.cli("alloc", "logs", "-stderr", alloc_id[:8])
    assert err.stdout == "to-stderr\n", err.stderr


def test_script_checks_of_a_docker_task_run_in_its_container_and_time_out(agent: Agent, dockerd: Dockerd) -> None:
    agent.run_file("checked.nomad.hcl", CHECKED, dockerd.image)
    assert wait_for(lambda: agent.status_is("checked", "running"), 120), agent.process.output
    alloc_id = agent.allocs("checked")[0]["ID"]

    def results() -> dict[str, dict[str, Any]]:
        answer = httpx.get(f"{agent.base}/v1/client/allocation/{alloc_id}/checks", timeout=10)
        return {c["Check"]: c for c in answer.json().values()} if answer.status_code == 200 else {}

    assert wait_for(lambda: results().get("inside", {}).get("Status") == "success", 60), results()
    seen, host = results()["inside"]["Output"].split()
    # The file only the container's /tmp holds, and the container's hostname, not the host's.
    assert seen.removeprefix("seen=") == host.removeprefix("host=") != os.uname().nodename
    assert wait_for(lambda: results().get("slow", {}).get("Status") == "failure", 60), results()
    assert "timed out after 1s" in results()["slow"]["Output"]
    assert agent.cli("job", "stop", "-purge", "checked").returncode == 0
    assert wait_for(lambda: not containers_of(dockerd, alloc_id), 60)


def test_a_bad_config_key_fails_the_task_naming_it(agent: Agent, dockerd: Dockerd) -> None:
    job = {
        "Job": {
            "ID": "badkey",
            "Type": "batch",
            "Datacenters": ["*"],
            "TaskGroups": [
                {
                    "Name": "g",
                    "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                    "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
                    "Tasks": [
                        {"Name": "t", "Driver": "docker", "Config": {"image": dockerd.image, "privileged": True}}
                    ],
                }
            ],
        }
    }
    (agent.home / "badkey.json").write_text(json.dumps(job))
    assert agent.cli("job", "run", "-detach", "badkey.json").returncode == 0
    assert wait_for(lambda: agent.status_is("badkey", "failed"), 60)
    state = agent.alloc(agent.allocs("badkey")[0]["ID"])["TaskStates"]["t"]
    failure = next(e for e in state["Events"] if e["Type"] == "Driver Failure")
    assert "privileged" in failure["DisplayMessage"]


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def test_a_client_whose_daemon_goes_down_reports_docker_unhealthy_and_gets_no_docker_work(
    cluster: Cluster, workdir: Path
) -> None:
    (workdir / "d1").mkdir()
    with private_dockerd(bridge=False) as daemon:
        # In the client's own directory: its log file is named after its arguments.
        settings = {"server": cluster.base, "driver_fingerprint_interval_s": 0.5, "docker_endpoint": daemon.endpoint}
        (workdir / "d1" / "client.json").write_text(json.dumps(settings))
        cluster.client("d1", "--driver", "docker", "--config", "client.json")
        node_id = cluster.node_id("d1")

        def docker_health() -> bool | None:
            node = cluster.http.get(f"/v1/node/{node_id}").json()
            healthy = node["Drivers"].get("docker", {}).get("Healthy")
            return None if healthy is None else bool(healthy)

        assert wait_for(lambda: docker_health() is True, 30)
    # The daemon has exited: the next fingerprint says so, and the servers stop placing there.
    assert wait_for(lambda: docker_health() is False, 30)
    node = cluster.http.get(f"/v1/node/{node_id}").json()
    assert "driver.docker" not in node["Attributes"]
    assert "Failed to connect to docker daemon" in node["Drivers"]["docker"]["HealthDescription"]
    task = {"Name": "t", "Driver": "docker", "Config": {"image": "busybox"}, "Resources": {"CPU": 10, "MemoryMB": 10}}
    cluster.register({"ID": "nowhere", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [task]}]})
    cluster.settle()
    assert cluster.allocs("nowhere") == []
    summary = cluster.http.get("/v1/job/nowhere/summary").json()
    assert summary["Summary"]["g"]["Queued"] == 1


def driver_task(alloc_dir: Path, name: str, alloc_id: str, script: str) -> TaskSpec:
    for sub in ("alloc/logs", f"{name}/local", f"{name}/secrets"):
        (alloc_dir / sub).mkdir(parents=True, exist_ok=True)
    config = {"image": "corral-busybox:latest", "command": "sh", "args": ["-c", script]}
    return TaskSpec(name, "docker", config, {}, 1.0, alloc_id=alloc_id, alloc_dir=alloc_dir)


def test_a_new_driver_reattaches_by_container_id_and_cleanup_finds_containers_by_label(
    dockerd: Dockerd, tmp_path: Path
) -> None:
    allocs = tmp_path / "allocs"
    first = Docker(dockerd.endpoint)
    alloc_dir = allocs / "a-reattach"
    task = driver_task(
        alloc_dir, "t", "a-reattach", "echo before; while [ ! -e /local/go ]; do sleep 0.1; done; echo after; exit 7"
    )
    handle = first.start(task, alloc_dir / "t", alloc_dir / "alloc" / "logs")
    saved = handle.state()
    assert handle.wait(0.5) is None
    # A restarted client: another driver, only the saved state.
    again = Docker(dockerd.endpoint).reattach(task, alloc_dir / "t", saved)
    assert again is not None
    stdout = alloc_dir / "alloc" / "logs" / "t.stdout.0"
    assert wait_for(lambda: stdout.exists() and "before" in stdout.read_text(), 30)
    (alloc_dir / "t" / "local" / "go").write_text("\n")
    assert again.wait(30) == 7
    assert "after" in stdout.read_text()
    # Removed once its exit was recorded. Both drivers' handles watch the container, so the
    # daemon may still be finishing one's removal ("Removal In Progress") when the other returns.
    assert wait_for(lambda: containers_of(dockerd, "a-reattach") == [], 30), containers_of(dockerd, "a-reattach")
    assert Docker(dockerd.endpoint).reattach(task, alloc_dir / "t", saved) is None  # gone: start anew

    # Containers of an allocation that is destroyed, and of one this client no longer knows.
    kept, lost = allocs / "a-kept", allocs / "a-lost"
    for alloc_id, directory in (("a-kept", kept), ("a-lost", lost)):
        first.start(driver_task(directory, "s", alloc_id, "sleep 600"), directory / "s", directory / "alloc" / "logs")
    elsewhere = tmp_path / "other-client" / "allocs" / "a-other"
    other = first.start(
        driver_task(elsewhere, "s", "a-other", "sleep 600"), elsewhere / "s", elsewhere / "alloc" / "logs"
    )
    assert first.sweep(allocs, keep={"a-kept"}) == 1
    assert containers_of(dockerd, "a-lost") == [] and len(containers_of(dockerd, "a-kept")) == 1
    assert len(containers_of(dockerd, "a-other")) == 1  # another client's: not ours to remove
    assert first.destroy_alloc("a-kept") == 1 and containers_of(dockerd, "a-kept") == []
    assert other.kill(1.0, "SIGKILL") == 137
    assert wait_for(lambda: containers_of(dockerd, "a-other") == [], 30)


def test_the_pause_container_is_built_from_busybox_found_again_and_swept_with_its_allocation(
    dockerd: Dockerd, tmp_path: Path
) -> None:
    """The group namespace's owner (docker_pause.py): the default infra image is built from the
    host's busybox when the daemon lacks it; a second create_network (a restarted client) finds
    the running pause container; destroy_network and the sweep of lost allocations remove it."""
    client = dockerd.client()
    try:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(DEFAULT_INFRA_IMAGE, force=True)
        allocs = tmp_path / "allocs"
        driver = Docker(dockerd.endpoint)
        pid = driver.create_network("a-pause", allocs / "a-pause")
        assert client.images.get(DEFAULT_INFRA_IMAGE).attrs["Config"]["Cmd"] is None  # imported: no Cmd of its own
        assert Path(f"/proc/{pid}/ns/net").exists()
        assert driver.create_network("a-pause", allocs / "a-pause") == pid  # found, not made again
        (pause,) = containers_of(dockerd, "a-pause")
        assert pause["Names"] == ["/nomad_init_a-pause"] and pause["HostConfig"]["NetworkMode"] == "none"
        driver.destroy_network("a-pause")
        assert containers_of(dockerd, "a-pause") == []
        driver.destroy_network("a-pause")  # gone already: fine

        driver.create_network("a-lost", allocs / "a-lost")
        assert driver.sweep(allocs, keep=set()) == 1 and containers_of(dockerd, "a-lost") == []
    finally:
        client.close()
