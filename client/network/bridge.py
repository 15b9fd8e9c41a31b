"""Nomad's `network { mode = "bridge" }` for the exec and raw_exec drivers: one network
namespace per allocation (/var/run/netns/corral-<owner>-<alloc id>, made with `ip netns`; the
owner tag names the client's allocations directory, so a client recognises its own and sweeps
the ones no allocation of it holds any more: a client killed -9 leaves them; when the group has
docker tasks the docker driver's pause container made the namespace and it is attached under
that name by the pause process's PID, `ip netns attach`), attached to the
client's bridge (`nomad`, subnet 172.26.64.0/20 unless configured) by the CNI plugins Nomad
uses, in its configuration list's shape: loopback; bridge with host-local addresses, a
gateway and masquerading; firewall with the NOMAD-ADMIN chain; portmap, which maps each
allocated host port to the port the task listens on (`to`). Teardown is CNI DEL, then the
namespace goes. What ADD returned is kept in the allocation's directory, so a restarted
client tears down what an earlier run set up. The group's docker tasks join through the pause
container (client/drivers/docker_pause.py), exec and raw_exec tasks by the path."""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from app.wire.json import JsonObject, JsonValue
from client.drivers import PortMapping
from client.network import cni

log = structlog.get_logger(__name__)

NETNS_DIR = Path("/var/run/netns")
DEFAULT_BRIDGE = "nomad"
DEFAULT_SUBNET = "172.26.64.0/20"
ADMIN_CHAIN = "NOMAD-ADMIN"
IFNAME = "eth0"
STATE = "network.json"  # in the allocation's directory: the netns and ADD's result
COMMAND_TIMEOUT_S = 30.0
# portmap's DEL does nothing without a mapping; given any, it removes the container's chains
# (by its ID, whatever the ports): the runtime config of an orphan whose record is lost.
ORPHAN_RUNTIME: JsonObject = {"portMappings": [{"hostPort": 1, "containerPort": 1, "protocol": "tcp"}]}
HOST_LOCAL_DIR = Path("/var/lib/cni/networks")  # host-local IPAM's leases: <network>/<address>


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


NETNS_PREFIX = "corral-"
OWNER_HEX = 8  # of the sha256 of the allocations directory's path


def owner_tag(allocs_dir: Path) -> str:
    """Which client's namespace: its allocations directory, hashed (stable across its restarts)."""
    return hashlib.sha256(str(allocs_dir.resolve()).encode()).hexdigest()[:OWNER_HEX]


def owner_prefix(allocs_dir: Path) -> str:
    return f"{NETNS_PREFIX}{owner_tag(allocs_dir)}-"


def netns_name(alloc_dir: Path) -> str:
    """The allocation's namespace (and CNI container ID, which host-local writes in its leases)."""
    return owner_prefix(alloc_dir.parent) + alloc_dir.name


def netns_path(alloc_dir: Path) -> str:
    return str(NETNS_DIR / netns_name(alloc_dir))


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


def _make(name: str, holder_pid: int) -> list[str]:
    """`ip` making the named namespace: a new one, or the namespace of process holder_pid
    (a pause container's) bind-mounted under the name."""
    return ["ip", "netns", "attach", name, str(holder_pid)] if holder_pid > 0 else ["ip", "netns", "add", name]


def setup(config: BridgeConfig, ports: Sequence[PortMapping], alloc_dir: Path, holder_pid: int = 0) -> str:
    """Make the allocation's namespace (or name that of process holder_pid) and attach it to
    the bridge; returns the namespace's path. On failure whatever was made is removed again."""
    name, netns = netns_name(alloc_dir), netns_path(alloc_dir)
    if not Path(netns).exists():
        made = _run(_make(name, holder_pid))
        if made.returncode != 0:
            raise NetworkError(f"creating network namespace {name}: {made.stderr.decode().strip()}")
    runtime: JsonObject = {"portMappings": port_mappings(ports)}
    (alloc_dir / STATE).write_text(json.dumps({"netns": netns, "runtime": runtime, "result": None}))
    try:
        _admin_chain(config)
        result = cni.add(config.conflist(), cni.Attachment(name, netns, IFNAME), runtime, config.cni_path)
    except (cni.CniError, NetworkError) as err:
        teardown(config, alloc_dir)
        raise NetworkError(f"failed to configure network: {err}") from err
    (alloc_dir / STATE).write_text(json.dumps({"netns": netns, "runtime": runtime, "result": result}))
    return netns


def isolate(alloc_dir: Path, holder_pid: int = 0) -> str:
    """Nomad's `mode = "none"`: the allocation's own namespace (or that of process holder_pid)
    with only loopback (up), nothing attached; recorded as setup records a bridge's (mode none:
    teardown asks no CNI plugin)."""
    name, netns = netns_name(alloc_dir), netns_path(alloc_dir)
    (alloc_dir / STATE).write_text(json.dumps({"netns": netns, "mode": "none", "runtime": {}, "result": None}))
    for argv in (_make(name, holder_pid), ["ip", "-n", name, "link", "set", "lo", "up"]):
        if argv[2] in ("add", "attach") and Path(netns).exists():
            continue
        done = _run(argv)
        if done.returncode != 0:
            teardown(BridgeConfig(), alloc_dir)
            raise NetworkError(f"{' '.join(argv)}: {done.stderr.decode().strip()}")
    return netns


def teardown(config: BridgeConfig, alloc_dir: Path) -> list[str]:
    """CNI DEL and the namespace removed, when setup recorded one (a no-op otherwise, so it is
    safe to call again); the failures, if any."""
    state_file = alloc_dir / STATE
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return []
    netns = str(state.get("netns") or netns_path(alloc_dir))
    runtime = state.get("runtime") if isinstance(state.get("runtime"), dict) else {}
    result = state.get("result") if isinstance(state.get("result"), dict) else None
    failures = _release(config, netns, runtime, result, attached=state.get("mode") != "none")
    if not failures:
        with contextlib.suppress(FileNotFoundError):
            state_file.unlink()
    return failures


def _release(
    config: BridgeConfig, netns: str, runtime: JsonObject, result: JsonObject | None, attached: bool = True
) -> list[str]:
    """CNI DEL of the namespace's attachment (its container ID is the namespace's name) unless it
    had none, then the namespace removed; the failures. DEL succeeds for what is already gone."""
    name = Path(netns).name
    where = cni.Attachment(name, netns, IFNAME)
    failures = cni.delete(config.conflist(), where, runtime, config.cni_path, result) if attached else []
    if Path(netns).exists():
        removed = _run(["ip", "netns", "delete", name])
        if removed.returncode != 0:
            failures.append(f"removing network namespace {name}: {removed.stderr.decode().strip()}")
    return failures


def sweep(config: BridgeConfig, allocs_dir: Path, live: set[str]) -> list[str]:
    """Release the namespaces and host-local leases of this client (by their owner tag, or by the
    old bare allocation ID where this client's allocation directory recorded it) that no live
    allocation holds: what a client killed -9 (or whose allocation state was lost) left
    behind. Returns the namespaces (or lease holders) swept."""
    prefix = owner_prefix(allocs_dir)
    held = _held_names(config)
    orphans = {name: name[len(prefix) :] for name in held if name.startswith(prefix)}
    orphans.update({name: name for name in held if _old_style_ours(allocs_dir, name)})
    swept = []
    for name, alloc_id in sorted(orphans.items()):
        if alloc_id in live:
            continue
        state = _recorded(allocs_dir / alloc_id)
        runtime, result = state.get("runtime"), state.get("result")
        try:
            failures = _release(
                config,
                str(NETNS_DIR / name),
                runtime if isinstance(runtime, dict) else ORPHAN_RUNTIME,
                result if isinstance(result, dict) else None,
                attached=state.get("mode") != "none",
            )
        except NetworkError as err:  # `ip` missing or hung: the client starts all the same
            failures = [str(err)]
        if failures:
            log.warning("orphan network namespace not released", netns=name, failures=failures)
            continue
        swept.append(name)
    return swept


def _held_names(config: BridgeConfig) -> set[str]:
    """The namespaces under /var/run/netns and the container IDs holding host-local leases of
    the bridge's network (its files: one per address, the holder's ID on the first line)."""
    names: set[str] = set()
    with contextlib.suppress(OSError):  # none made yet, or not ours to read (no root): nothing to sweep
        names.update(entry.name for entry in NETNS_DIR.iterdir())
    with contextlib.suppress(OSError):
        for lease in (HOST_LOCAL_DIR / str(config.conflist()["name"])).iterdir():
            with contextlib.suppress(OSError, UnicodeDecodeError):
                names.add(lease.read_text().splitlines()[0].strip() if lease.stat().st_size else "")
    names.discard("")
    return names


def _old_style_ours(allocs_dir: Path, name: str) -> bool:
    """A namespace named by the bare allocation ID, as clients named them before the owner tag:
    this client's only where its allocation directory of that ID recorded that very namespace
    (a bare ID alone could be another client's, or a Nomad client's, which names them so)."""
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return _recorded(allocs_dir / name).get("netns") == str(NETNS_DIR / name)


def _recorded(alloc_dir: Path) -> JsonObject:
    """What setup recorded in a (perhaps surviving) allocation directory; {} when nothing."""
    try:
        state = json.loads((alloc_dir / STATE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _admin_chain(config: BridgeConfig) -> None:
    """Nomad's forwarding rule for traffic into the bridge's subnet, in its own chain that the
    firewall plugin jumps to (made once; both steps are idempotent)."""
    _run(["iptables", "-w", "-t", "filter", "-N", ADMIN_CHAIN])  # exists already: fine
    rule = ["-o", config.name, "-d", config.subnet, "-j", "ACCEPT"]
    if _run(["iptables", "-w", "-t", "filter", "-C", ADMIN_CHAIN, *rule]).returncode != 0:
        added = _run(["iptables", "-w", "-t", "filter", "-A", ADMIN_CHAIN, *rule])
        if added.returncode != 0:
            raise NetworkError(f"iptables {ADMIN_CHAIN}: {added.stderr.decode().strip()}")
