"""Bridge networking's parts without root: Nomad's configuration list and port mappings, the
CNI calling convention (checked against fake plugins that record what they were given), the
client's bridge settings, and which tasks join the allocation's namespace."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.wire.json import JsonObject
from client.allocs.alloc_runner import AllocRunner
from client.allocs.task_plans import task_plans
from client.config import ConfigError, build
from client.drivers import Mock, NetworkManager, PortMapping, StartError
from client.drivers.raw_exec import as_user, enter_netns
from client.drivers.users import Identity
from client.network import bridge, cni
from client.network.bridge import BridgeConfig, conflist, netns_name, netns_path, owner_tag, port_mappings
from client.tasks.taskenv import NodeInfo
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit

FAKE_PLUGIN = """#!/bin/sh
here=$(dirname "$0"); name=$(basename "$0")
cat > "$here/$name.$CNI_COMMAND.conf"
env | grep '^CNI_' | sort > "$here/$name.$CNI_COMMAND.env"
[ -e "$here/$name.fail" ] && { echo '{"code": 7, "msg": "refused", "details": "by the test"}'; exit 1; }
[ "$CNI_COMMAND" = ADD ] && echo "{\\"cniVersion\\": \\"0.4.0\\", \\"by\\": \\"$name\\"}"
exit 0
"""


def test_the_configuration_list_is_nomads_bridge_with_its_defaults() -> None:
    listed = conflist("nomad", "172.26.64.0/20")
    assert listed["cniVersion"] == "0.4.0" and listed["name"] == "nomad"
    plugins = listed["plugins"]
    assert isinstance(plugins, list)
    assert [p["type"] for p in plugins if isinstance(p, dict)] == ["loopback", "bridge", "firewall", "portmap"]
    bridge, firewall, portmap = plugins[1], plugins[2], plugins[3]
    assert bridge == {
        "type": "bridge",
        "bridge": "nomad",
        "ipMasq": True,
        "isGateway": True,
        "forceAddress": True,
        "hairpinMode": False,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": "172.26.64.0/20"}]], "routes": [{"dst": "0.0.0.0/0"}]},
    }
    assert firewall == {"type": "firewall", "backend": "iptables", "iptablesAdminChainName": "NOMAD-ADMIN"}
    assert portmap == {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True}


def test_each_port_maps_for_tcp_and_udp_to_its_to_or_else_the_host_port() -> None:
    ports = [PortMapping("http", "10.0.0.5", 25001, 8080), PortMapping("raw", "10.0.0.5", 25002, 0)]
    assert port_mappings(ports) == [
        {"hostPort": 25001, "containerPort": 8080, "protocol": "tcp"},
        {"hostPort": 25001, "containerPort": 8080, "protocol": "udp"},
        {"hostPort": 25002, "containerPort": 25002, "protocol": "tcp"},
        {"hostPort": 25002, "containerPort": 25002, "protocol": "udp"},
    ]


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    for kind in ("loopback", "bridge", "firewall", "portmap"):
        plugin = tmp_path / kind
        plugin.write_text(FAKE_PLUGIN)
        plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def _recorded(plugins: Path, kind: str, command: str) -> tuple[dict[str, Any], dict[str, str]]:
    conf = json.loads((plugins / f"{kind}.{command}.conf").read_text())
    env = dict(line.split("=", 1) for line in (plugins / f"{kind}.{command}.env").read_text().splitlines())
    return conf, env


def test_add_runs_the_plugins_in_order_with_the_cni_environment_and_the_previous_result(plugins: Path) -> None:
    where = cni.Attachment("alloc-1", "/var/run/netns/alloc-1")
    runtime: JsonObject = {"portMappings": [{"hostPort": 1, "containerPort": 2, "protocol": "tcp"}]}
    result = cni.add(conflist("nomad", "172.26.64.0/20"), where, runtime, [plugins])
    assert result == {"cniVersion": "0.4.0", "by": "portmap"}
    loopback, env = _recorded(plugins, "loopback", "ADD")
    assert env == {
        "CNI_ARGS": "IgnoreUnknown=true",
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "alloc-1",
        "CNI_IFNAME": "eth0",
        "CNI_NETNS": "/var/run/netns/alloc-1",
        "CNI_PATH": str(plugins),
    }
    assert loopback == {"type": "loopback", "name": "nomad", "cniVersion": "0.4.0"}
    bridge, _ = _recorded(plugins, "bridge", "ADD")
    assert bridge["prevResult"] == {"cniVersion": "0.4.0", "by": "loopback"}
    assert "runtimeConfig" not in bridge  # it declares no capability
    portmap, _ = _recorded(plugins, "portmap", "ADD")
    assert portmap["prevResult"] == {"cniVersion": "0.4.0", "by": "firewall"}
    assert portmap["runtimeConfig"] == runtime


def test_a_failing_plugin_stops_add_with_its_message(plugins: Path) -> None:
    (plugins / "firewall.fail").touch()
    with pytest.raises(cni.CniError, match="'firewall' \\(ADD\\) failed: refused: by the test"):
        cni.add(conflist("nomad", "172.26.64.0/20"), cni.Attachment("a", "/n"), {}, [plugins])
    assert not (plugins / "portmap.ADD.conf").exists()


def test_del_runs_every_plugin_in_reverse_with_adds_result_past_a_failure(plugins: Path) -> None:
    (plugins / "portmap.fail").touch()
    added: JsonObject = {"cniVersion": "0.4.0", "ips": [{"address": "172.26.64.2/20"}]}
    failures = cni.delete(conflist("nomad", "172.26.64.0/20"), cni.Attachment("a", "/n"), {}, [plugins], added)
    assert len(failures) == 1 and "portmap" in failures[0]
    for kind in ("loopback", "bridge", "firewall"):
        conf, env = _recorded(plugins, kind, "DEL")
        assert env["CNI_COMMAND"] == "DEL" and conf["prevResult"] == added
    order = sorted(plugins.glob("*.DEL.conf"), key=lambda p: p.stat().st_mtime_ns)
    assert [p.name.split(".")[0] for p in order] == ["portmap", "firewall", "bridge", "loopback"]


def test_a_missing_plugin_is_named(tmp_path: Path) -> None:
    with pytest.raises(cni.CniError, match="CNI plugin 'loopback' not found"):
        cni.add(conflist("nomad", "172.26.64.0/20"), cni.Attachment("a", "/n"), {}, [tmp_path])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"bridge_network_subnet": "172.26.64.0/33"}, "bridge_network_subnet"),
        ({"bridge_network_subnet": "fd00::/64"}, "IPv4"),
        ({"bridge_network_name": "a-name-far-too-long"}, "bridge_network_name"),
        ({"bridge_network_hairpin_mode": "yes"}, "bridge_network_hairpin_mode"),
    ],
)
def test_bad_bridge_settings_are_refused_by_name(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(settings, {}, {})


def test_bridge_settings_reach_the_bridge_config() -> None:
    config = build({"bridge_network_name": "br0", "bridge_network_subnet": "10.9.0.0/24", "cni_path": "/a:/b"}, {}, {})
    bridge = config.bridge()
    assert (bridge.name, bridge.subnet, bridge.cni_path) == ("br0", "10.9.0.0/24", (Path("/a"), Path("/b")))
    assert build({}, {}, {}).bridge().name == "nomad"
    assert build({}, {}, {}).bridge().subnet == "172.26.64.0/20"


def _alloc(mode: str) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = [{"Name": n, "Driver": n, "Config": {}} for n in ("exec", "raw_exec", "docker")]
    group = {"Name": "g", "Networks": [{"Mode": mode}], "Tasks": tasks}
    return {"ID": "a1", "TaskGroup": "g", "Job": {"ID": "j", "Type": "service", "TaskGroups": [group]}}


def test_every_task_of_a_bridge_group_joins_its_namespace_docker_included(tmp_path: Path) -> None:
    plans, _ = task_plans(_alloc("bridge"), NodeInfo.of({}), tmp_path)
    assert {p.spec.name: p.spec.netns for p in plans} == {
        "exec": netns_path(tmp_path),
        "raw_exec": netns_path(tmp_path),
        "docker": netns_path(tmp_path),
    }
    plans, _ = task_plans(_alloc("host"), NodeInfo.of({}), tmp_path)
    assert all(p.spec.netns == "" for p in plans)


def test_raw_exec_enters_the_namespace_before_dropping_to_its_user() -> None:
    who = Identity("nobody", 65534, 65534, (65534,))
    assert [*enter_netns("/var/run/netns/a1"), *as_user(who)] == [
        "nsenter",
        "--net=/var/run/netns/a1",
        "--",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--groups",
        "65534",
        "--",
    ]
    assert "--clear-groups" in as_user(Identity("x", 1, 1, ()))


def test_namespace_names_carry_the_clients_owner_tag_and_the_allocation_id(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "a" / "allocs", tmp_path / "b" / "allocs"
    name = netns_name(mine / "1111")
    assert name == f"corral-{owner_tag(mine)}-1111" and len(owner_tag(mine)) == 8
    assert owner_tag(mine) == owner_tag(tmp_path / "a" / "." / "allocs")  # the resolved path
    assert owner_tag(theirs) != owner_tag(mine)
    assert netns_path(mine / "1111") == f"/var/run/netns/{name}"


def test_the_sweep_releases_only_this_clients_namespaces_and_leases_that_no_live_allocation_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allocs, other = tmp_path / "allocs", tmp_path / "other" / "allocs"
    netns_dir, leases = tmp_path / "netns", tmp_path / "leases" / "nomad"
    netns_dir.mkdir()
    leases.mkdir(parents=True)
    for held in (netns_name(allocs / "live"), netns_name(allocs / "gone"), netns_name(other / "gone"), "a1b2"):
        (netns_dir / held).touch()
    (leases / "172.26.64.9").write_text(f"{netns_name(allocs / 'lease-only')}\r\neth0")
    (leases / "last_reserved_ip.0").write_text("172.26.64.9")
    (allocs / "gone").mkdir(parents=True)
    recorded = {"netns": "x", "runtime": {"portMappings": []}, "result": {"ips": []}}
    (allocs / "gone" / "network.json").write_text(json.dumps(recorded))
    released: dict[str, tuple[JsonObject, JsonObject | None]] = {}

    def release(
        config: BridgeConfig, netns: str, runtime: JsonObject, result: JsonObject | None, attached: bool = True
    ) -> list[str]:
        released[Path(netns).name] = (runtime, result)
        return []

    monkeypatch.setattr(bridge, "NETNS_DIR", netns_dir)
    monkeypatch.setattr(bridge, "HOST_LOCAL_DIR", leases.parent)
    monkeypatch.setattr(bridge, "_release", release)
    swept = bridge.sweep(BridgeConfig(), allocs, {"live"})
    assert sorted(swept) == sorted([netns_name(allocs / "gone"), netns_name(allocs / "lease-only")])
    # What setup recorded is used when the directory survived; otherwise portmap is given a mapping.
    assert released[netns_name(allocs / "gone")] == ({"portMappings": []}, {"ips": []})
    assert released[netns_name(allocs / "lease-only")] == (bridge.ORPHAN_RUNTIME, None)


def test_the_sweep_releases_old_style_namespaces_only_where_this_client_recorded_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the owner tag a namespace was named by the bare allocation ID: such a one is this
    client's (and swept) only where its allocation directory recorded that very namespace."""
    allocs, netns_dir, leases = tmp_path / "allocs", tmp_path / "netns", tmp_path / "leases" / "nomad"
    netns_dir.mkdir()
    leases.mkdir(parents=True)
    ours, live, foreign, lease_only = (str(uuid.uuid4()) for _ in range(4))
    for name in (ours, live, foreign):
        (netns_dir / name).touch()
    (leases / "172.26.64.7").write_text(f"{lease_only}\r\neth0")
    for alloc_id in (ours, live, lease_only):
        (allocs / alloc_id).mkdir(parents=True)
        recorded = {"netns": str(netns_dir / alloc_id), "runtime": {"portMappings": []}, "result": {"ips": []}}
        (allocs / alloc_id / "network.json").write_text(json.dumps(recorded))
    released: list[str] = []

    def release(
        config: BridgeConfig, netns: str, runtime: JsonObject, result: JsonObject | None, attached: bool = True
    ) -> list[str]:
        released.append(Path(netns).name)
        return []

    monkeypatch.setattr(bridge, "NETNS_DIR", netns_dir)
    monkeypatch.setattr(bridge, "HOST_LOCAL_DIR", leases.parent)
    monkeypatch.setattr(bridge, "_release", release)
    assert sorted(bridge.sweep(BridgeConfig(), allocs, {live})) == sorted([ours, lease_only])
    assert sorted(released) == sorted([ours, lease_only])  # never `foreign` (no record) nor the live one


def test_every_task_of_a_group_in_mode_none_joins_its_own_namespace(tmp_path: Path) -> None:
    plans, _ = task_plans(_alloc("none"), NodeInfo.of({}), tmp_path)
    assert {p.spec.name: (p.spec.network_mode, p.spec.netns) for p in plans} == {
        "exec": ("none", netns_path(tmp_path)),
        "raw_exec": ("none", netns_path(tmp_path)),
        "docker": ("none", netns_path(tmp_path)),  # through the pause container (docker_pause.py)
    }


class PauseRefused(Mock):
    """A driver that owns its group's namespace (as docker does) but cannot make it."""

    def __init__(self) -> None:
        self.destroyed: list[str] = []

    def create_network(self, alloc_id: str, alloc_dir: Path) -> int:
        raise StartError("failed to create the pause container: no such image")

    def destroy_network(self, alloc_id: str) -> None:
        self.destroyed.append(alloc_id)


def test_a_namespace_its_driver_cannot_make_fails_the_allocation_and_removes_what_was_made(tmp_path: Path) -> None:
    body = _alloc("bridge")
    body["Job"]["TaskGroups"][0]["Tasks"] = [{"Name": "web", "Driver": "docker", "Config": {}}]
    driver = PauseRefused()
    assert isinstance(driver, NetworkManager)
    runner = AllocRunner(body, tmp_path / "a1", {"docker": driver}, lambda _: None, node={})
    assert runner.network_manager is driver
    runner.start()
    assert wait_for(lambda: runner.terminal, 30)
    assert runner.client_status == "failed"
    assert runner.description == (
        'failed to setup alloc: pre-run hook "network" failed: failed to create the pause container: no such image'
    )
    assert [e["Type"] for e in runner.tasks["web"].state["Events"]][-1] == "Setup Failure"
    assert driver.destroyed and set(driver.destroyed) == {"a1"}
    assert not Path(netns_path(tmp_path / "a1")).exists()


def test_a_host_mode_group_has_no_network_manager(tmp_path: Path) -> None:
    body = _alloc("host")
    body["Job"]["TaskGroups"][0]["Tasks"] = [{"Name": "web", "Driver": "docker", "Config": {}}]
    runner = AllocRunner(body, tmp_path / "a1", {"docker": PauseRefused()}, lambda _: None, node={})
    assert runner.network_manager is None
