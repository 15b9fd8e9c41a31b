"""Nomad's `network { mode = "bridge" }` for the exec and raw_exec drivers: one network
namespace per allocation (/var/run/netns/<alloc id>, made with `ip netns`), attached to the
client's bridge (`nomad`, subnet 172.26.64.0/20 unless configured) by the CNI plugins Nomad
uses, in its configuration list's shape: loopback; bridge with host-local addresses, a
gateway and masquerading; firewall with the NOMAD-ADMIN chain; portmap, which maps each
allocated host port to the port the task listens on (`to`). Teardown is CNI DEL, then the
namespace goes. What ADD returned is kept in the allocation's directory, so a restarted
client tears down what an earlier run set up. (docker tasks use Docker's own publishing.)"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.wire.json import JsonObject, JsonValue
from client.drivers import PortMapping
from client.network import cni

NETNS_DIR = Path("/var/run/netns")
DEFAULT_BRIDGE = "nomad"
DEFAULT_SUBNET = "172.26.64.0/20"
ADMIN_CHAIN = "NOMAD-ADMIN"
IFNAME = "eth0"
STATE = "network.json"  # in the allocation's directory: the netns and ADD's result
COMMAND_TIMEOUT_S = 30.0


class NetworkError(Exception):
    """The allocation's network could not be set up."""


def conflist(bridge: str, subnet: str, hairpin: bool = False) -> JsonObject:
    """Nomad's bridge configuration list (client/allocrunner/networking_bridge_linux.go)."""
    return {
        "cniVersion": "0.4.0",
        "name": "nomad",
        "plugins": [
            {"type": "loopback"},
            {
                "type": "bridge",
                "bridge": bridge,
                "ipMasq": True,
                "isGateway": True,
                "forceAddress": True,
                "hairpinMode": hairpin,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "firewall", "backend": "iptables", "iptablesAdminChainName": ADMIN_CHAIN},
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ],
    }


def port_mappings(ports: Sequence[PortMapping]) -> list[JsonValue]:
    """portmap's runtime config, as Nomad builds it: each port for tcp and udp, `to` defaulting
    to the host port."""
    mappings: list[JsonValue] = []
    for port in ports:
        if port.host_port <= 0:
            continue
        inside = port.to if port.to > 0 else port.host_port
        for protocol in ("tcp", "udp"):
            mappings.append({"hostPort": port.host_port, "containerPort": inside, "protocol": protocol})
    return mappings


def netns_path(alloc_id: str) -> str:
    return str(NETNS_DIR / alloc_id)


def _run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, capture_output=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NetworkError(f"{argv[0]}: {err}") from err


@dataclass(frozen=True)
class BridgeConfig:
    """The client's bridge options (Nomad's bridge_network_name, bridge_network_subnet,
    bridge_network_hairpin_mode, cni_path)."""

    name: str = DEFAULT_BRIDGE
    subnet: str = DEFAULT_SUBNET
    hairpin: bool = False
    cni_path: tuple[Path, ...] = field(default=cni.DEFAULT_CNI_PATH)

    def conflist(self) -> JsonObject:
        return conflist(self.name, self.subnet, self.hairpin)


def setup(config: BridgeConfig, alloc_id: str, ports: Sequence[PortMapping], alloc_dir: Path) -> str:
    """Make the allocation's namespace and attach it; returns the namespace's path. On failure
    whatever was made is removed again."""
    netns = netns_path(alloc_id)
    if not Path(netns).exists():
        made = _run(["ip", "netns", "add", alloc_id])
        if made.returncode != 0:
            raise NetworkError(f"creating network namespace {alloc_id}: {made.stderr.decode().strip()}")
    runtime: JsonObject = {"portMappings": port_mappings(ports)}
    (alloc_dir / STATE).write_text(json.dumps({"netns": netns, "runtime": runtime, "result": None}))
    try:
        _admin_chain(config)
        result = cni.add(config.conflist(), cni.Attachment(alloc_id, netns, IFNAME), runtime, config.cni_path)
    except (cni.CniError, NetworkError) as err:
        teardown(config, alloc_id, alloc_dir)
        raise NetworkError(f"failed to configure network: {err}") from err
    (alloc_dir / STATE).write_text(json.dumps({"netns": netns, "runtime": runtime, "result": result}))
    return netns


def teardown(config: BridgeConfig, alloc_id: str, alloc_dir: Path) -> list[str]:
    """CNI DEL and the namespace removed, when setup recorded one (a no-op otherwise, so it is
    safe to call again); the failures, if any."""
    state_file = alloc_dir / STATE
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return []
    netns = str(state.get("netns") or netns_path(alloc_id))
    runtime = state.get("runtime") if isinstance(state.get("runtime"), dict) else {}
    result = state.get("result") if isinstance(state.get("result"), dict) else None
    where = cni.Attachment(alloc_id, netns, IFNAME)
    failures = cni.delete(config.conflist(), where, runtime, config.cni_path, result)
    if Path(netns).exists():
        removed = _run(["ip", "netns", "delete", alloc_id])
        if removed.returncode != 0:
            failures.append(f"removing network namespace {alloc_id}: {removed.stderr.decode().strip()}")
    if not failures:
        with contextlib.suppress(FileNotFoundError):
            state_file.unlink()
    return failures


def _admin_chain(config: BridgeConfig) -> None:
    """Nomad's forwarding rule for traffic into the bridge's subnet, in its own chain that the
    firewall plugin jumps to (made once; both steps are idempotent)."""
    _run(["iptables", "-w", "-t", "filter", "-N", ADMIN_CHAIN])  # exists already: fine
    rule = ["-o", config.name, "-d", config.subnet, "-j", "ACCEPT"]
    if _run(["iptables", "-w", "-t", "filter", "-C", ADMIN_CHAIN, *rule]).returncode != 0:
        added = _run(["iptables", "-w", "-t", "filter", "-A", ADMIN_CHAIN, *rule])
        if added.returncode != 0:
            raise NetworkError(f"iptables {ADMIN_CHAIN}: {added.stderr.decode().strip()}")
