"""Nomad's client alloc_dir and network_interface (and their agent flags -alloc-dir and
-network-interface), and -plugin-dir, which corral accepts with a warning: its drivers are built in."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from app.agentconfig.files import AgentConfigError
from app.agentconfig.flags import AgentFlags, flag_document
from app.agentconfig.load import load
from app.cli import main
from client.config import ClientConfig, ConfigError, build
from client.fingerprint import advertised, fingerprint, host_network
from client.network.interfaces import InterfaceError, device_of, interface_address

pytestmark = pytest.mark.unit
LOOPBACK = next(name for name, found in psutil.net_if_addrs().items() if any(a.address == "127.0.0.1" for a in found))


def test_the_flags_become_the_client_keys_and_plugin_dir_a_warning(tmp_path: Path) -> None:
    flags = AgentFlags(
        data_dir=str(tmp_path), client=True, servers="127.0.0.1:4646",
        alloc_dir="/srv/allocs", network_interface=LOOPBACK, plugin_dir="/opt/nomad/plugins",
    )  # fmt: skip
    document = flag_document(flags)
    assert document["plugin_dir"] == "/opt/nomad/plugins"
    assert document["client"] == {
        "enabled": True,
        "servers": ["127.0.0.1:4646"],
        "alloc_dir": "/srv/allocs",
        "network_interface": LOOPBACK,
    }
    found = load([], flags=flags)
    assert (found.client["alloc_dir"], found.client["network_interface"]) == ("/srv/allocs", LOOPBACK)
    assert "command-line flags: plugin_dir has no meaning in corral; ignored" in found.warnings


def test_the_file_keys_are_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "client.hcl"
    path.write_text(
        f'data_dir = "{tmp_path}"\nplugin_dir = "/opt/p"\n'
        f'client {{\n enabled = true\n servers = ["127.0.0.1:4646"]\n alloc_dir = "/srv/a"\n'
        f' network_interface = "{LOOPBACK}"\n}}\n'
    )
    found = load([path])
    assert (found.client["alloc_dir"], found.client["network_interface"]) == ("/srv/a", LOOPBACK)
    assert f"{path}: plugin_dir has no meaning in corral; ignored" in found.warnings
    with pytest.raises(AgentConfigError, match=r"command-line flags: client\.alloc_dir: must be an absolute path"):
        load([path], flags=AgentFlags(alloc_dir="relative/allocs"))


def test_the_client_keeps_allocations_in_alloc_dir(tmp_path: Path) -> None:
    default = build({"data_dir": str(tmp_path)}, {}, {})
    assert default.allocs_root() == tmp_path / "allocs"
    moved = build({"data_dir": str(tmp_path), "alloc_dir": str(tmp_path / "elsewhere")}, {}, {})
    assert moved.allocs_root() == tmp_path / "elsewhere"
    assert fingerprint(moved).attributes["unique.storage.volume"] == str(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="alloc_dir: must be an absolute path, got 'rel'"):
        build({"data_dir": str(tmp_path), "alloc_dir": "rel"}, {}, {})


def test_an_unknown_interface_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"network_interface: no interface 'nosuch9' on this host \(it has: .*lo"):
        build({"network_interface": "nosuch9"}, {}, {})
    with pytest.raises(InterfaceError, match="no interface"):
        interface_address("nosuch9")


def test_the_cli_refuses_an_unknown_interface_before_starting(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["agent", "-client", "-servers", "127.0.0.1:1", "-data-dir", str(tmp_path), "-network-interface", "nosuch9"],
    )
    assert result.exit_code == 1
    assert "command-line flags: client: network_interface: no interface 'nosuch9'" in result.output


def test_the_node_advertises_the_interfaces_address(tmp_path: Path) -> None:
    config = ClientConfig(data_dir=tmp_path, network_interface=LOOPBACK)
    assert advertised(config) == (LOOPBACK, "127.0.0.1")
    found = fingerprint(config)
    assert found.attributes["unique.network.ip-address"] == "127.0.0.1"
    assert host_network(found) == {"Mode": "host", "Device": LOOPBACK, "IP": "127.0.0.1", "CIDR": "127.0.0.1/32"}
    assert device_of("127.0.0.1") == LOOPBACK and device_of("192.0.2.255") == ""
