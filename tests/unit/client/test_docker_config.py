"""The docker driver's config and container spec, pure: Nomad's keys parsed and checked (an
unknown key, a host path outside the allocation, a bad mount refused naming what is wrong),
the container Nomad would create (binds, memory and CPU limits, labels, network and ports),
the OOM verdict from an inspected container, the task plan's ports and container paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client.allocs.task_plans import task_plans
from client.config import build
from client.drivers import Docker, DriverOptions, ExitDetail, Limits, PortMapping, StartError, TaskSpec, available
from client.drivers.docker import exit_of
from client.drivers.docker_config import DEFAULT_PULL_TIMEOUT_S, Bind, parse
from client.drivers.docker_container import create_kwargs, network, published
from client.drivers.docker_pause import DEFAULT_INFRA_IMAGE
from client.tasks.taskenv import NodeInfo

pytestmark = pytest.mark.unit

ALLOC = "/data/allocs/a1"
TASK_DIR = f"{ALLOC}/web"


def parsed(**config: Any) -> Any:
    return parse({"image": "busybox:1.36", **config}, TASK_DIR, ALLOC)


def spec(**fields: Any) -> TaskSpec:
    base: dict[str, Any] = {
        "name": "web",
        "driver": "docker",
        "config": {},
        "env": {"NOMAD_JOB_ID": "j", "NOMAD_GROUP_NAME": "g", "NOMAD_NAMESPACE": "default"},
        "kill_timeout_s": 5.0,
        "alloc_id": "a1",
        "alloc_dir": Path(ALLOC),
    }
    return TaskSpec(**{**base, **fields})


def test_nomads_keys_are_parsed() -> None:
    config = parse(
        {
            "image": "busybox:1.36",
            "command": "httpd",
            "args": ["-f", "-p", 8080],
            "entrypoint": ["/bin/sh", "-c"],
            "ports": ["http"],
            "volumes": ["local/conf:/etc/app:ro", "../alloc/data:/data"],
            "mount": [{"type": "bind", "source": "secrets", "target": "/run/s", "readonly": True}],
            "network_mode": "host",
            "labels": [{"team": "web"}],
            "work_dir": "/srv",
            "auth": [{"username": "u", "password": "p", "server_address": "r.example"}],
            "force_pull": True,
            "image_pull_timeout": "90s",
        },
        TASK_DIR,
        ALLOC,
    )
    assert config.cmd() == ["httpd", "-f", "-p", "8080"]
    assert config.entrypoint == ("/bin/sh", "-c")
    assert config.binds == (
        Bind(f"{TASK_DIR}/local/conf", "/etc/app", True),
        Bind(f"{ALLOC}/alloc/data", "/data", False),
        Bind(f"{TASK_DIR}/secrets", "/run/s", True),
    )
    assert config.labels == {"team": "web"} and config.work_dir == "/srv" and config.network_mode == "host"
    assert config.auth is not None and config.auth.as_sdk() == {
        "username": "u",
        "password": "p",
        "serveraddress": "r.example",
    }
    assert (config.force_pull, config.image_pull_timeout_s) == (True, 90.0)


def test_defaults_and_command_forms() -> None:
    config = parsed()
    assert (config.cmd(), config.entrypoint, config.image_pull_timeout_s) == (None, None, DEFAULT_PULL_TIMEOUT_S)
    assert parsed(args=["a", "b"]).cmd() == ["a", "b"]  # args alone: the image's entrypoint gets them
    assert parsed(labels={"a": "1"}).labels == {"a": "1"}  # a JSON job's map


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"privileged": True, "cap_add": ["x"]}, "unsupported key(s) cap_add, privileged"),
        ({"image": ""}, "config.image is required"),
        ({"image": 3}, "config.image is required"),
        ({"args": "x"}, "config.args must be a list of strings"),
        ({"volumes": ["/etc:/etc"]}, "volumes are not enabled; cannot mount host path '/etc'"),
        ({"volumes": ["../../../etc:/etc"]}, "volumes are not enabled"),
        ({"volumes": ["local"]}, "must be host_path:container_path"),
        ({"volumes": ["local:relative"]}, "must be absolute"),
        ({"mount": [{"type": "volume", "source": "v", "target": "/v"}]}, 'only type = "bind"'),
        ({"mount": [{"type": "bind", "target": "/v"}]}, "source and target are required"),
        ({"mount": [{"type": "bind", "source": "a", "target": "/v", "extra": 1}]}, "unsupported key(s) extra"),
        ({"network_mode": "weird"}, "config.network_mode 'weird'"),
        ({"force_pull": "yes"}, "config.force_pull must be true or false"),
        ({"image_pull_timeout": "soon"}, "config.image_pull_timeout"),
        ({"auth": [{"token": "t"}]}, "config.auth: unknown key(s) token"),
    ],
)
def test_bad_config_is_refused_naming_the_key(config: dict[str, Any], message: str) -> None:
    with pytest.raises(StartError) as raised:
        parsed(**config)
    assert message in str(raised.value)


def test_host_volumes_enabled_allows_absolute_paths() -> None:
    config = parse({"image": "i", "volumes": ["/etc:/host-etc:ro"]}, TASK_DIR, ALLOC, host_volumes=True)
    assert config.binds == (Bind("/etc", "/host-etc", True),)


def test_the_container_as_nomad_creates_it() -> None:
    task = spec(
        user="nobody",
        limits=Limits(cpu_mhz=250, memory_mb=64, memory_max_mb=128),
        config={"image": "busybox", "command": "sleep", "args": ["60"]},
    )
    kwargs = create_kwargs(task, parsed(command="sleep", args=["60"], labels={"team": "web"}, work_dir="/srv"))
    assert kwargs["name"] == "web-a1" and kwargs["command"] == ["sleep", "60"] and kwargs["user"] == "nobody"
    assert kwargs["volumes"] == [
        f"{ALLOC}/alloc:/alloc:rw",
        f"{TASK_DIR}/local:/local:rw",
        f"{TASK_DIR}/secrets:/secrets:rw",
    ]
    assert (kwargs["mem_limit"], kwargs["memswap_limit"], kwargs["mem_reservation"]) == (128 << 20, 128 << 20, 64 << 20)
    assert kwargs["cpu_shares"] == 250 and kwargs["working_dir"] == "/srv"
    assert kwargs["labels"] == {
        "team": "web",
        "com.hashicorp.nomad.alloc_id": "a1",
        "com.hashicorp.nomad.task_name": "web",
        "com.hashicorp.nomad.job_id": "j",
        "com.hashicorp.nomad.task_group_name": "g",
        "com.hashicorp.nomad.namespace": "default",
        "corral.alloc_dir": ALLOC,
    }
    plain = create_kwargs(spec(limits=Limits(memory_mb=32)), parsed())
    assert (plain["mem_limit"], "mem_reservation" in plain, "cpu_shares" in plain) == (32 << 20, False, False)


HTTP = PortMapping("http", "10.0.0.5", 25000, 8080)
ADMIN = PortMapping("admin", "10.0.0.5", 25001, -1)


def test_bridge_mode_publishes_every_group_port_to_its_to() -> None:
    mode, ports = network(spec(network_mode="bridge", ports=(HTTP, ADMIN)), parsed())
    assert mode == "bridge"
    assert ports == {
        "8080/tcp": [("10.0.0.5", 25000)],
        "8080/udp": [("10.0.0.5", 25000)],
        "25001/tcp": [("10.0.0.5", 25001)],
        "25001/udp": [("10.0.0.5", 25001)],
    }
    with pytest.raises(StartError, match="conflicts with the group network mode"):
        network(spec(network_mode="bridge"), parsed(network_mode="host"))


def test_a_group_namespace_is_joined_through_the_allocations_pause_container() -> None:
    joined = network(spec(network_mode="bridge", ports=(HTTP,), netns="/var/run/netns/x"), parsed())
    assert joined == ("container:nomad_init_a1", {})  # CNI's portmap maps the ports, not docker
    alone = network(spec(network_mode="none", netns="/var/run/netns/x"), parsed(network_mode="none"))
    assert alone == ("container:nomad_init_a1", {})
    with pytest.raises(StartError, match="conflicts with the group network mode"):
        network(spec(network_mode="bridge", netns="/var/run/netns/x"), parsed(network_mode="host"))


def test_host_mode_runs_on_dockers_bridge_publishing_the_listed_ports() -> None:
    assert network(spec(ports=(HTTP, ADMIN)), parsed(ports=["http"])) == ("bridge", published([HTTP]))
    assert network(spec(ports=(HTTP,)), parsed(network_mode="host", ports=["http"])) == ("host", {})
    assert network(spec(network_mode="none"), parsed()) == ("none", {})
    with pytest.raises(StartError, match="port\\(s\\) db not found"):
        network(spec(ports=(HTTP,)), parsed(ports=["db"]))
    with pytest.raises(StartError, match="not supported by the docker driver"):
        network(spec(network_mode="cni/mynet"), parsed())


def test_an_oom_killed_container_exits_137_with_nomads_message() -> None:
    assert exit_of({"State": {"OOMKilled": True, "ExitCode": 137}}) == (137, ExitDetail(True, "OOM Killed"))
    assert exit_of({"State": {"OOMKilled": False, "ExitCode": 3}}) == (3, ExitDetail())


def test_a_docker_tasks_plan_has_container_paths_ports_and_the_network_mode(tmp_path: Path) -> None:
    task = {"Name": "web", "Driver": "docker", "Config": {"image": "i", "args": ["${NOMAD_TASK_DIR}/x"]}}
    group = {"Name": "g", "Tasks": [task], "Networks": [{"Mode": "bridge"}]}
    alloc = {
        "ID": "a1",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "TaskGroups": [group]},
        "AllocatedResources": {"Shared": {"Ports": [{"Label": "http", "Value": 25000, "To": 8080}]}},
    }
    node = NodeInfo(attributes={"unique.network.ip-address": "10.0.0.5"})
    (plan,), _ = task_plans(alloc, node, tmp_path)
    assert plan.spec.ports == (PortMapping("http", "10.0.0.5", 25000, 8080),)
    assert plan.spec.network_mode == "bridge"
    env = plan.spec.env
    assert (env["NOMAD_ALLOC_DIR"], env["NOMAD_TASK_DIR"], env["NOMAD_SECRETS_DIR"]) == ("/alloc", "/local", "/secrets")
    assert (env["NOMAD_PORT_http"], env["NOMAD_HOST_PORT_http"], env["NOMAD_ADDR_http"]) == (
        "8080",
        "25000",
        "10.0.0.5:25000",
    )
    assert "PATH" not in env and "HOME" not in env  # the image's own
    assert plan.spec.config["args"] == ["/local/x"]
    raw = {**task, "Driver": "raw_exec"}
    (raw_plan,), _ = task_plans(
        {**alloc, "Job": {"ID": "j", "TaskGroups": [{**group, "Tasks": [raw]}]}}, node, tmp_path
    )
    assert raw_plan.spec.env["NOMAD_TASK_DIR"] == str(tmp_path / "web" / "local") and "PATH" in raw_plan.spec.env
    assert raw_plan.spec.network_mode == "bridge"  # what an exec driver needs to know too


def test_infra_image_reaches_the_docker_driver_with_its_default() -> None:
    assert build({"docker_infra_image": "registry.k8s.io/pause-amd64:3.3"}, {}, {}).docker_infra_image == (
        "registry.k8s.io/pause-amd64:3.3"
    )
    chosen = available(("docker",), DriverOptions(docker_infra_image="registry.k8s.io/pause-amd64:3.3"))["docker"]
    assert isinstance(chosen, Docker) and chosen.infra_image == "registry.k8s.io/pause-amd64:3.3"
    default = available(("docker",), DriverOptions())["docker"]
    assert isinstance(default, Docker) and default.infra_image == DEFAULT_INFRA_IMAGE == "corral/pause:busybox"
