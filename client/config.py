"""Client configuration: flags, or a JSON config file (flags win), with Nomad's defaults."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from app.jobspec.durations import SECOND, DurationError, duration_ns
from client.drivers.users import DEFAULT_CHECKED_DRIVERS, DEFAULT_DENYLIST, parse_list
from client.network.bridge import BridgeConfig
from client.network.interfaces import InterfaceError, interface_address

DRIVERS = ("raw_exec", "exec", "mock", "docker")
# raw_exec runs commands as the client's user with no isolation: off unless the config or a flag
# enables it, as in Nomad; dev mode (the dev agent's client) enables all of them (docker reports
# itself unhealthy, and takes no work, while no daemon answers).
DEFAULT_DRIVERS = ("mock",)
IFNAMSIZ = 15  # the longest Linux interface name
# <data_dir>/alloc_dir: the path of a custom alloc_dir, for `corral operator client-state`.
ALLOCS_POINTER = "alloc_dir"


@dataclass(frozen=True)
class GcConfig:
    """Client-side GC (seed 000): Nomad's defaults."""

    interval_s: float = 60.0
    disk_usage_threshold: float = 80.0
    inode_usage_threshold: float = 70.0
    max_allocs: int = 50
    parallel_destroys: int = 2


@dataclass(frozen=True)
class HostVolume:
    """Nomad's client `host_volume "name" { path, read_only }`: a host directory jobs may mount."""

    name: str
    path: Path
    read_only: bool = False

    def fingerprint(self) -> dict[str, Any]:
        """Node.HostVolumes[name], as Nomad's ClientHostVolumeConfig."""
        return {"Name": self.name, "Path": str(self.path), "ReadOnly": self.read_only}


@dataclass(frozen=True)
class ClientConfig:
    server: str = "http://127.0.0.1:4646"
    data_dir: Path = Path(".corral-client")
    name: str = ""
    datacenter: str = "dc1"
    node_class: str = ""
    node_pool: str = "default"
    meta: dict[str, str] = field(default_factory=dict)
    drivers: tuple[str, ...] = DEFAULT_DRIVERS
    reserved_cpu: int = 0
    reserved_memory_mb: int = 0
    reserved_disk_mb: int = 0
    reserved_ports: str = ""
    # Overrides of the fingerprinted totals (tests and simulations pretend to be other machines).
    cpu_total_mhz: int = 0
    memory_total_mb: int = 0
    disk_total_mb: int = 0
    http_bind: str = "127.0.0.1:0"
    gc: GcConfig = GcConfig()
    sync_interval_s: float = 0.2
    # Nomad's dev mode: on shutdown destroy every allocation instead of leaving tasks running.
    dev_mode: bool = False
    # exec: host path -> path in the task's chroot (empty: Nomad's default chroot_env), and the
    # cgroup every task's groups are made under (Nomad's cgroup_parent, "nomad" there).
    chroot_env: dict[str, str] = field(default_factory=dict)
    cgroup_parent: str = "corral"
    # Nomad's client options user.denylist and user.checked_drivers.
    user_denylist: tuple[str, ...] = DEFAULT_DENYLIST
    user_checked_drivers: tuple[str, ...] = DEFAULT_CHECKED_DRIVERS
    # Nomad's docker plugin options: the daemon's address (else DOCKER_HOST, else
    # unix:///var/run/docker.sock) and whether tasks may bind host paths outside their allocation.
    docker_endpoint: str = ""
    docker_volumes_enabled: bool = False
    # Nomad's docker `infra_image`: the pause container that owns a bridge group's network
    # namespace when the group has docker tasks (empty: corral/pause:busybox, built from the
    # host's busybox when the daemon lacks it).
    docker_infra_image: str = ""
    # How often the drivers are fingerprinted again (a docker daemon going down or coming back).
    driver_fingerprint_interval_s: float = 15.0
    host_volumes: tuple[HostVolume, ...] = ()
    # Nomad's host_volumes_dir: where the mkdir plugin makes dynamic host volumes (empty:
    # <data_dir>/host_volumes).
    host_volumes_dir: str = ""
    # Host directories whose files `artifact { source = "file:///..." }` may fetch (Nomad has no
    # file getter: none unless the operator lists some).
    artifact_file_roots: tuple[Path, ...] = ()
    # Nomad's bridge networking options (exec and raw_exec tasks of a bridge-mode group): the
    # bridge's name and subnet, hairpin mode, and where the CNI plugins are (colon-separated).
    bridge_network_name: str = "nomad"
    bridge_network_subnet: str = "172.26.64.0/20"
    bridge_network_hairpin_mode: bool = False
    cni_path: str = "/opt/cni/bin:/usr/lib/cni"
    # Nomad's alloc_dir: where allocation directories are made (empty: <data_dir>/allocs).
    alloc_dir: str = ""
    # Nomad's network_interface: the interface whose address the node advertises and host ports
    # bind to (empty: the address of the default route).
    network_interface: str = ""

    def allocs_root(self) -> Path:
        return Path(self.alloc_dir).resolve() if self.alloc_dir else self.data_dir / "allocs"

    def record_allocs_root(self) -> None:
        """Leave in the data directory where a custom alloc_dir put the allocations, so that
        `corral operator client-state DATA_DIR` finds them from the data directory alone (as
        Nomad's reads everything from its state database there)."""
        pointer = self.data_dir / ALLOCS_POINTER
        if self.alloc_dir:
            pointer.write_text(f"{self.allocs_root()}\n")
        else:
            pointer.unlink(missing_ok=True)

    def volumes_root(self) -> Path:
        return Path(self.host_volumes_dir).resolve() if self.host_volumes_dir else self.data_dir / "host_volumes"

    def bridge(self) -> BridgeConfig:
        return BridgeConfig(
            self.bridge_network_name,
            self.bridge_network_subnet,
            self.bridge_network_hairpin_mode,
            tuple(Path(p) for p in self.cni_path.split(":") if p),
        )


class ConfigError(ValueError):
    """A config file or flag value that cannot be used; the message names it."""


def load_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"config file {path}: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: must hold a JSON object")
    return data


def _given(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, (), {})}


def interval_seconds(value: object) -> float:
    """A GC interval: Nomad's duration string ("1m", "30s") or a number of seconds; positive."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError('must be a duration like "1m" or "30s", or seconds')
    if isinstance(value, str) and not value.strip().isdigit():
        try:
            seconds = duration_ns(value.strip()) / SECOND
        except DurationError as err:
            raise ConfigError(str(err)) from err
    else:
        seconds = float(value)
    if seconds <= 0:
        raise ConfigError(f"must be positive, got {value!r}")
    return seconds


def _percent(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ConfigError(f"must be a percentage between 0 and 100, got {value!r}")
    return float(value)


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"must be an integer of at least 1, got {value!r}")
    return value


# Nomad's client keys without their "gc_" prefix, the GcConfig field each sets, and its check.
# "interval_s" (seconds) is the name this file format used first; it stays accepted.
GC_KEYS: dict[str, tuple[str, Callable[[object], float]]] = {
    "interval": ("interval_s", interval_seconds),
    "interval_s": ("interval_s", interval_seconds),
    "disk_usage_threshold": ("disk_usage_threshold", _percent),
    "inode_usage_threshold": ("inode_usage_threshold", _percent),
    "max_allocs": ("max_allocs", _count),
    "parallel_destroys": ("parallel_destroys", _count),
}


def gc_config(values: dict[str, Any]) -> GcConfig:
    """GcConfig from Nomad's key names, with or without their "gc_" prefix; errors name the key."""
    settings: dict[str, Any] = {}
    for key, value in values.items():
        name = key.removeprefix("gc_")
        if name not in GC_KEYS:
            raise ConfigError(f"gc: unknown setting {key!r}; choose from {', '.join(f'gc_{k}' for k in GC_KEYS)}")
        attribute, check = GC_KEYS[name]
        try:
            settings[attribute] = check(value)
        except ConfigError as err:
            raise ConfigError(f"gc_{name}: {err}") from err
    return replace(GcConfig(), **settings)


# Nomad's client `options` this client acts on, and the ClientConfig field each sets.
OPTIONS = {"user.denylist": "user_denylist", "user.checked_drivers": "user_checked_drivers"}


def client_options(values: object) -> dict[str, tuple[str, ...]]:
    """The file's `options` object (Nomad's client options map) as ClientConfig fields."""
    if not isinstance(values, dict):
        raise ConfigError("options: must be an object")
    settings: dict[str, tuple[str, ...]] = {}
    for key, value in values.items():
        if key not in OPTIONS:
            raise ConfigError(f"options: unknown option {key!r}; choose from {', '.join(OPTIONS)}")
        try:
            settings[OPTIONS[key]] = tuple(sorted(parse_list(value, key)))
        except ValueError as err:
            raise ConfigError(f"options: {err}") from err
    return settings


def _chroot_env(value: object) -> dict[str, str]:
    """chroot_env: absolute host paths to absolute paths inside the chroot."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError("chroot_env: must be an object of host path to chroot path strings")
    for source, target in value.items():
        if not source.startswith("/") or not target.startswith("/") or ".." in Path(target).parts:
            raise ConfigError(f"chroot_env: {source!r} -> {target!r}: both must be absolute paths, without '..'")
    return dict(value)


def _cgroup_parent(value: object) -> str:
    if not isinstance(value, str) or not value.strip("/") or ".." in value.split("/"):
        raise ConfigError(f"cgroup_parent: must be a cgroup path like 'corral', got {value!r}")
    return value.strip("/")


def host_volumes(value: object) -> tuple[HostVolume, ...]:
    """The file's "host_volume": {name: {path, read_only}}, or a list of such objects (how
    Nomad's HCL blocks read as JSON). Each path must be an existing directory."""
    items = value if isinstance(value, list) else [value]
    found: dict[str, HostVolume] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ConfigError('host_volume: must be an object {"name": {"path": "/dir", "read_only": false}}')
        for name, body in item.items():
            found[name] = _host_volume(str(name), body)
    return tuple(found[name] for name in sorted(found))


def _host_volume(name: str, body: object) -> HostVolume:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, dict):
        raise ConfigError(f"host_volume {name!r}: must be an object with path and read_only")
    unknown = sorted(set(body) - {"path", "read_only"})
    if unknown:
        raise ConfigError(f"host_volume {name!r}: unknown setting(s) {', '.join(unknown)}; choose from path, read_only")
    path, read_only = body.get("path"), body.get("read_only", False)
    if not isinstance(path, str) or not path:
        raise ConfigError(f"host_volume {name!r}: path is required")
    if not isinstance(read_only, bool):
        raise ConfigError(f"host_volume {name!r}: read_only must be true or false, got {read_only!r}")
    resolved = Path(path).resolve()
    if not resolved.is_dir():
        raise ConfigError(f"host_volume {name!r}: path {path} is not an existing directory")
    return HostVolume(name, resolved, read_only)


def _check_bridge(values: Mapping[str, object]) -> None:
    """bridge_network_name: a Linux interface name; bridge_network_subnet: an IPv4 network."""
    name = values.get("bridge_network_name", "nomad")
    if not isinstance(name, str) or not 0 < len(name) <= IFNAMSIZ or "/" in name or any(c.isspace() for c in name):
        raise ConfigError(f"bridge_network_name: must be an interface name of 1-{IFNAMSIZ} characters, got {name!r}")
    subnet = values.get("bridge_network_subnet", "172.26.64.0/20")
    try:
        network = ipaddress.ip_network(str(subnet))
    except ValueError as err:
        raise ConfigError(f"bridge_network_subnet: {err}") from None
    if network.version != 4 or network.prefixlen > 30:
        raise ConfigError(f"bridge_network_subnet: must be an IPv4 network of at least 4 addresses, got {subnet!r}")
    if not isinstance(values.get("bridge_network_hairpin_mode", False), bool):
        raise ConfigError("bridge_network_hairpin_mode: must be true or false")
    if not isinstance(values.get("cni_path", ""), str):
        raise ConfigError("cni_path: must be a colon-separated list of directories")


def _check_addressing(values: Mapping[str, object]) -> None:
    """alloc_dir: an absolute path; network_interface: an interface of this host with an address."""
    alloc_dir = values.get("alloc_dir", "")
    if not isinstance(alloc_dir, str) or (alloc_dir and not alloc_dir.startswith("/")):
        raise ConfigError(f"alloc_dir: must be an absolute path, got {alloc_dir!r}")
    interface = values.get("network_interface", "")
    if not isinstance(interface, str):
        raise ConfigError(f"network_interface: must be an interface name, got {interface!r}")
    if interface:
        try:
            interface_address(interface)
        except InterfaceError as err:
            raise ConfigError(f"network_interface: {err}") from None


def volume_flag(value: str) -> tuple[HostVolume, ...]:
    """`--host-volume name=/path` or `name=/path:ro`."""
    name, sep, path = value.partition("=")
    read_only = path.endswith(":ro")
    path = path.removesuffix(":ro")
    if not sep or not name or not path:
        raise ConfigError(f"host volume must be name=/path or name=/path:ro, got {value!r}")
    return (_host_volume(name, {"path": path, "read_only": read_only}),)


def build(file_values: dict[str, Any], flags: dict[str, Any], gc_flags: dict[str, Any]) -> ClientConfig:
    """Defaults, then the file, then flags that were given (None means not given).
    GC settings come from the file's "gc" object or its top-level "gc_*" keys, as Nomad names them."""
    file_values, flags = dict(file_values), dict(flags)
    if "host_volume" in file_values:
        file_values["host_volumes"] = host_volumes(file_values.pop("host_volume"))
    if "artifact_file_roots" in file_values:
        roots = file_values["artifact_file_roots"]
        if not isinstance(roots, list) or not all(isinstance(r, str) and r.startswith("/") for r in roots):
            raise ConfigError("artifact_file_roots: must be a list of absolute directory paths")
        file_values["artifact_file_roots"] = tuple(Path(r).resolve() for r in roots)
    flag_volumes = tuple(v for flag in flags.pop("host_volumes", None) or () for v in volume_flag(flag))
    values = {**file_values, **_given(flags)}
    values.update(client_options(values.pop("options", {})))
    if "chroot_env" in values:
        values["chroot_env"] = _chroot_env(values["chroot_env"])
    if "cgroup_parent" in values:
        values["cgroup_parent"] = _cgroup_parent(values["cgroup_parent"])
    _check_bridge(values)
    _check_addressing(values)
    if flag_volumes:  # flags add to (and replace by name) the file's volumes
        named = {v.name: v for v in (*values.get("host_volumes", ()), *flag_volumes)}
        values["host_volumes"] = tuple(named[n] for n in sorted(named))
    gc_file = values.pop("gc", {}) or {}
    if not isinstance(gc_file, dict):
        raise ConfigError("gc: must be an object")
    top_level_gc = {k: values.pop(k) for k in list(values) if k.startswith("gc_")}
    gc = gc_config({**top_level_gc, **gc_file, **_given(gc_flags)})
    known = {f.name for f in fields(ClientConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown client setting(s): {', '.join(unknown)}")
    if "drivers" not in values and values.get("dev_mode"):
        values["drivers"] = DRIVERS
    config = replace(ClientConfig(), **values, gc=gc)
    config = replace(
        config, data_dir=Path(config.data_dir).resolve(), drivers=tuple(config.drivers), meta=dict(config.meta)
    )
    bad = sorted(set(config.drivers) - set(DRIVERS))
    if bad:
        raise ConfigError(f"drivers: unknown driver(s) {', '.join(bad)}; choose from {', '.join(DRIVERS)}")
    return config
