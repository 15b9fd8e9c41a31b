"""Bridge networking for exec and raw_exec (issue 38, item 4), for real: a `corral client` gives
a bridge-mode allocation its own network namespace, attached by Debian's CNI plugins to the
client's bridge, and maps the allocated host port to `to = 8080`. The task, listening on 8080
inside, answers on the host port from the host with Nomad's port variables; after `job stop`
the namespace and the port mapping are gone. Needs root, cgroups, iproute2, iptables and the
CNI plugins (skipped elsewhere); every chain, bridge and namespace made is removed after."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from client.drivers.exec import unusable_reason
from client.isolation.cgroups import ROOT, UNIFIED
from client.network.bridge import NETNS_DIR, NETNS_PREFIX
from client.network.cni import DEFAULT_CNI_PATH
from tests.support.cluster import Cluster
from tests.support.cni_cleanup import HOST_LOCAL_DIR, network_traces
from tests.support.dockerd import Dockerd, dockerd_binary, private_dockerd
from tests.support.processes import CorralFactory, wait_for


def _missing() -> str | None:
    if unusable_reason() is not None:
        return f"exec cannot run here: {unusable_reason()}"
    if not any((d / "bridge").exists() and (d / "portmap").exists() for d in DEFAULT_CNI_PATH):
        return "the CNI plugins (containernetworking-plugins) are not installed"
    if shutil.which("ip") is None or shutil.which("iptables") is None:
        return "iproute2 and iptables are needed"
    return None


pytestmark = [pytest.mark.acceptance, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]

BRIDGE = "corraltest0"  # not the default `nomad`: a test never touches an operator's bridge
SUBNET = "172.26.112.0/24"


@pytest.fixture
def parent() -> Iterator[str]:
    """A cgroup parent of this test's own, removed after."""
    name = f"corral-test-{uuid.uuid4().hex[:8]}"
    yield name
    for hierarchy in [*ROOT.iterdir(), UNIFIED]:
        top = hierarchy / name
        if top.is_dir() and not top.is_symlink():
            for group in sorted(top.glob("*/"), reverse=True):
                wait_for(functools.partial(_removed, group), 10)
            wait_for(functools.partial(_removed, top), 10)


def _removed(group: Path) -> bool:
    try:
        group.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def client_args(*drivers: str) -> tuple[str, ...]:
    """`corral client` arguments for c1 with DRIVERS, configured by the client.json `bridge_cluster` writes."""
    return ("c1", "--config=client.json", *(arg for driver in drivers for arg in ("--driver", driver)))


CLIENT_ARGS = client_args("exec", "raw_exec")


@contextlib.contextmanager
def bridge_cluster(
    corral: CorralFactory, database_url: str, workdir: Path, parent: str, args: tuple[str, ...], **config: str
) -> Iterator[Cluster]:
    """A cluster whose client c1 (started with ARGS) uses this module's bridge and cgroup parent,
    CONFIG adding client.json keys; every job is stopped and its allocations ended after."""
    with network_traces(BRIDGE):
        running = Cluster(corral, database_url, workdir)
        (workdir / "c1").mkdir()
        client_json = {
            "server": running.base,
            "cgroup_parent": parent,
            "bridge_network_name": BRIDGE,
            "bridge_network_subnet": SUBNET,
            **config,
        }
        (workdir / "c1" / "client.json").write_text(json.dumps(client_json))
        running.client(*args)
        try:
            yield running
        finally:
            for job in running.http.get("/v1/jobs").json():
                running.http.delete(f"/v1/job/{job['ID']}")
            wait_for(lambda: all(_done(running, job["ID"]) for job in running.http.get("/v1/jobs").json()), 60)
            running.close()


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path, parent: str) -> Iterator[Cluster]:
    with bridge_cluster(corral, database_url, workdir, parent, CLIENT_ARGS) as running:
        yield running


def _done(cluster: Cluster, job_id: str) -> bool:
    return all(a["ClientStatus"] in ("complete", "failed", "lost") for a in cluster.allocs(job_id))


SERVE = "env > {local}/env.txt; exec python3 -m http.server 8080 --bind 0.0.0.0 --directory {local}"


def bridge_job(job_id: str, driver: str, local: str) -> dict[str, Any]:
    return {
        "ID": job_id,
        "Type": "service",
        "TaskGroups": [
            {
                "Name": "g",
                "Count": 1,
                "Networks": [{"Mode": "bridge", "DynamicPorts": [{"Label": "http", "To": 8080}]}],
                "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
                "EphemeralDisk": {"SizeMB": 10},
                "Tasks": [
                    {
                        "Name": "web",
                        "Driver": driver,
                        "Config": {"command": "/bin/sh", "args": ["-c", SERVE.format(local=local)]},
                        "Resources": {"CPU": 100, "MemoryMB": 128},
                    }
                ],
            }
        ],
    }


def _get(url: str) -> str:
    try:
        answer = httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return ""
    return answer.text if answer.status_code == 200 else ""


def alloc_netns(alloc_id: str) -> Path:
    """The allocation's namespace: corral-<its client's owner tag>-<allocation ID>."""
    (found,) = NETNS_DIR.glob(f"{NETNS_PREFIX}*-{alloc_id}")
    return found


def kill_9_client(home: Path) -> None:
    """SIGKILL to the `corral client` running in `home` and to everything it started."""
    (client,) = [p for p in psutil.process_iter() if _is_client_in(p, home)]
    for process in [*client.children(recursive=True), client]:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs([client], timeout=30)


def _is_client_in(process: psutil.Process, home: Path) -> bool:
    try:
        return "client" in process.cmdline() and Path(process.cwd()) == home
    except psutil.Error:
        return False


def _leases() -> str:
    return "".join(p.read_text(errors="replace") for p in HOST_LOCAL_DIR.glob("*") if p.is_file())


def _portmap_rules() -> str:
    return subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout


def serve_and_stop(cluster: Cluster, job_id: str, driver: str, local: str) -> dict[str, str]:
    """Run the job; check it answers on its host port from the host and that its stop removes
    the namespace and the port mapping; the task's environment as it served it."""
    cluster.register(bridge_job(job_id, driver, local))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs(job_id)] == ["running"], 120), cluster.allocs(
        job_id
    )
    (stub,) = cluster.allocs(job_id)
    alloc = cluster.http.get(f"/v1/allocation/{stub['ID']}").json()
    (port,) = alloc["AllocatedResources"]["Shared"]["Ports"]
    netns = alloc_netns(alloc["ID"])
    assert netns.exists()
    page: dict[str, str] = {}

    def answered() -> bool:
        page["env"] = _get(f"http://127.0.0.1:{port['Value']}/env.txt")
        return bool(page["env"])

    assert wait_for(answered, 60), f"nothing answered on host port {port['Value']}"
    assert alloc["ID"] in _portmap_rules()  # portmap's DNAT for this allocation
    env = dict(line.split("=", 1) for line in page["env"].splitlines() if "=" in line)
    assert env["NOMAD_HOST_PORT_http"] == str(port["Value"])
    assert env["NOMAD_PORT_http"] == env["NOMAD_ALLOC_PORT_http"] == "8080"
    node = cluster.http.get(f"/v1/node/{alloc['NodeID']}").json()
    host_ip = node["Attributes"]["unique.network.ip-address"]
    assert env["NOMAD_IP_http"] == host_ip
    assert env["NOMAD_ADDR_http"] == f"{host_ip}:{port['Value']}"

    assert cluster.http.delete(f"/v1/job/{job_id}").status_code == 200
    assert wait_for(lambda: _done(cluster, job_id), 60), cluster.allocs(job_id)
    assert wait_for(lambda: not netns.exists(), 30), f"{netns} outlived the allocation"
    assert alloc["ID"] not in _portmap_rules(), "the port mapping outlived the allocation"
    assert not _get(f"http://127.0.0.1:{port['Value']}/env.txt")
    return env


def test_an_exec_task_in_bridge_mode_answers_on_its_host_port_and_its_netns_goes_with_job_stop(
    cluster: Cluster,
) -> None:
    env = serve_and_stop(cluster, "bridged-exec", "exec", "/local")
    assert env["NOMAD_TASK_DIR"] == "/local"  # it ran chrooted, as exec tasks do


def test_a_raw_exec_task_joins_the_allocation_network_namespace_as_nomads_does(cluster: Cluster) -> None:
    # Listening on 8080 in the host's namespace would not answer: the host port is mapped to
    # the allocation's own address.
    env = serve_and_stop(cluster, "bridged-raw", "raw_exec", "$NOMAD_TASK_DIR")
    assert os.path.isabs(env["NOMAD_TASK_DIR"]) and env["NOMAD_TASK_DIR"] != "/local"


def test_a_client_killed_9_sweeps_the_namespace_lease_and_port_mapping_it_left_on_its_next_start(
    cluster: Cluster, workdir: Path
) -> None:
    """Issue 38: kill -9 of the client (and its task), its state of the allocation lost with it
    and the job stopped meanwhile; nothing would ever tear the allocation's network down, so
    the restarted client sweeps its own orphans by their names."""
    cluster.register(bridge_job("orphaned", "raw_exec", "$NOMAD_TASK_DIR"))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("orphaned")] == ["running"], 120)
    (stub,) = cluster.allocs("orphaned")
    netns = alloc_netns(stub["ID"])
    assert netns.name in _leases() and stub["ID"] in _portmap_rules()
    kill_9_client(workdir / "c1")  # the client and its task: no teardown of anything
    assert netns.exists(), "the kill left the namespace behind (the premise of the test)"
    assert cluster.http.delete("/v1/job/orphaned").status_code == 200
    shutil.rmtree(workdir / "c1" / ".corral-client" / "allocs" / stub["ID"])  # its state, lost
    cluster.client(*CLIENT_ARGS)
    assert wait_for(lambda: not netns.exists(), 120), f"{netns} was not swept"
    assert netns.name not in _leases(), "the host-local lease was not released"
    assert stub["ID"] not in _portmap_rules(), "the port mapping was not removed"
    # Its allocation stays "running" as last reported (no client knows it any more); purged, so
    # the fixture's teardown does not wait out its minute for it to turn terminal.
    assert cluster.http.delete("/v1/job/orphaned?purge=true").status_code == 200


PROBE = """
import socket, sys
own = socket.create_server(("127.0.0.1", 0))
with socket.create_connection(own.getsockname(), timeout=5):
    pass  # its own loopback is up
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("reached")
except ConnectionRefusedError:
    print("refused")
"""


def test_an_exec_task_in_network_mode_none_has_only_its_own_loopback(cluster: Cluster, workdir: Path) -> None:
    """Issue 38: `network { mode = "none" }` gives the group a namespace of its own with only
    loopback: the task's 127.0.0.1 is not the host's, so the API listening there is unreachable."""
    api_port = cluster.base.rsplit(":", 1)[1]
    task = {
        "Name": "probe",
        "Driver": "exec",
        "Config": {"command": "/bin/sh", "args": ["-c", f"python3 -c '{PROBE}' {api_port} > /local/result"]},
        "Resources": {"CPU": 100, "MemoryMB": 128},
    }
    group = {
        "Name": "g",
        "Networks": [{"Mode": "none"}],
        "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
        "EphemeralDisk": {"SizeMB": 10},
        "Tasks": [task],
    }
    cluster.register({"ID": "isolated", "Type": "batch", "TaskGroups": [group]})
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("isolated")] == ["complete"], 120), (
        cluster.allocs("isolated")
    )
    (stub,) = cluster.allocs("isolated")
    result = workdir / "c1" / ".corral-client" / "allocs" / stub["ID"] / "probe" / "local" / "result"
    assert result.read_text().strip() == "refused"
    assert not list(NETNS_DIR.glob(f"{NETNS_PREFIX}*-{stub['ID']}")), "the namespace outlived the allocation"


@pytest.fixture(scope="module")
def dockerd() -> Iterator[Dockerd]:
    """This module's own daemon, without docker's bridge or iptables (CNI maps the ports here):
    it takes no machine-wide lock, so it never waits out another test file's bridge-owning
    daemon, which under xdist holds that lock for the whole of its worker's session."""
    if dockerd_binary() is None:
        pytest.skip("dockerd is not installed (apt-get install docker.io)")
    with private_dockerd(bridge=False) as daemon:
        yield daemon


@pytest.fixture
def docker_cluster(
    corral: CorralFactory, database_url: str, workdir: Path, parent: str, dockerd: Dockerd
) -> Iterator[Cluster]:
    """A client with the docker and raw_exec drivers on the module's private Docker daemon."""
    args = client_args("docker", "raw_exec")
    with bridge_cluster(corral, database_url, workdir, parent, args, docker_endpoint=dockerd.endpoint) as running:
        yield running


# The docker task serves on 8080 inside the group's namespace; the raw_exec task (on the host's
# filesystem, in the same namespace) fetches it from 127.0.0.1:8080 with the host's busybox.
DOCKER_WEB = "echo served-by-docker > /local/index.html; exec httpd -f -p 8080 -h /local"
NEIGHBOUR = (
    "until /bin/busybox wget -q -O $NOMAD_TASK_DIR/got http://127.0.0.1:8080/index.html; do sleep 0.2; done;"
    " exec sleep 600"
)


def shared_group(image: str) -> dict[str, Any]:
    return {
        "Name": "g",
        "Count": 1,
        "Networks": [{"Mode": "bridge", "DynamicPorts": [{"Label": "http", "To": 8080}]}],
        "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
        "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
        "EphemeralDisk": {"SizeMB": 10},
        "Tasks": [
            {
                "Name": "web",
                "Driver": "docker",
                "Config": {"image": image, "command": "sh", "args": ["-c", DOCKER_WEB]},
                "Resources": {"CPU": 100, "MemoryMB": 64},
            },
            {
                "Name": "neighbour",
                "Driver": "raw_exec",
                "Config": {"command": "/bin/sh", "args": ["-c", NEIGHBOUR]},
                "Resources": {"CPU": 100, "MemoryMB": 64},
            },
        ],
    }


def _containers(dockerd: Dockerd, alloc_id: str) -> list[dict[str, Any]]:
    client = dockerd.client()
    try:
        return list(client.api.containers(all=True, filters={"label": f"com.hashicorp.nomad.alloc_id={alloc_id}"}))
    finally:
        client.close()


@pytest.mark.skipif(dockerd_binary() is None, reason="dockerd is not installed (apt-get install docker.io)")
def test_docker_and_raw_exec_tasks_of_a_bridge_group_share_its_namespace_and_its_host_port(
    docker_cluster: Cluster, workdir: Path, dockerd: Dockerd
) -> None:
    """Issue 38 item 4: the docker task runs in the group's namespace (its pause container's,
    attached by CNI), so the raw_exec task reaches it on 127.0.0.1:8080 and the host port maps
    to it; the job's stop leaves no container (pause included), namespace or port mapping."""
    docker_cluster.register({"ID": "shared", "Type": "service", "TaskGroups": [shared_group(dockerd.image)]})
    assert wait_for(lambda: [a["ClientStatus"] for a in docker_cluster.allocs("shared")] == ["running"], 120), (
        docker_cluster.allocs("shared")
    )
    (stub,) = docker_cluster.allocs("shared")
    alloc = docker_cluster.http.get(f"/v1/allocation/{stub['ID']}").json()
    (port,) = alloc["AllocatedResources"]["Shared"]["Ports"]
    netns = alloc_netns(alloc["ID"])
    got = workdir / "c1" / ".corral-client" / "allocs" / alloc["ID"] / "neighbour" / "local" / "got"
    assert wait_for(lambda: got.exists() and got.read_text().strip() == "served-by-docker", 60), "not reached"
    assert wait_for(lambda: _get(f"http://127.0.0.1:{port['Value']}/index.html").strip() == "served-by-docker", 60)

    containers = {c["Labels"].get("com.hashicorp.nomad.task_name", ""): c for c in _containers(dockerd, alloc["ID"])}
    assert sorted(containers) == ["", "web"]  # the task's and the pause container
    pause = containers[""]
    assert pause["Names"] == [f"/nomad_init_{alloc['ID']}"]
    client = dockerd.client()
    try:
        web = client.api.inspect_container(containers["web"]["Id"])
        pause_pid = client.api.inspect_container(pause["Id"])["State"]["Pid"]
    finally:
        client.close()
    assert web["HostConfig"]["NetworkMode"] == f"container:{pause['Id']}"  # the daemon resolves the name
    assert os.stat(f"/proc/{pause_pid}/ns/net").st_ino == os.stat(netns).st_ino  # one namespace

    assert docker_cluster.http.delete("/v1/job/shared").status_code == 200
    assert wait_for(lambda: _done(docker_cluster, "shared"), 60), docker_cluster.allocs("shared")
    assert wait_for(lambda: not _containers(dockerd, alloc["ID"]), 60), "a container outlived the allocation"
    assert wait_for(lambda: not netns.exists(), 30), f"{netns} outlived the allocation"
    assert alloc["ID"] not in _portmap_rules(), "the port mapping outlived the allocation"
