"""Task drivers. Each driver is a module; this package knows which ones exist and what a node
reports about them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    Driver,
    ExitDetail,
    ExplainsExit,
    Handle,
    Limits,
    LogConfig,
    Mount,
    PortMapping,
    StartError,
    TaskSpec,
    exit_detail,
    log_paths,
    oom_killed,
    open_log,
    signal_number,
)
from client.drivers.docker import Docker, DockerHandle
from client.drivers.exec import Exec, ExecHandle, ExecSettings, unusable_reason
from client.drivers.mock import Mock, MockHandle
from client.drivers.raw_exec import RawExec, RawExecHandle
from client.drivers.users import UserPolicy

__all__ = [
    "DEFAULT_KILL_SIGNAL",
    "KILLED",
    "Docker",
    "DockerHandle",
    "Driver",
    "DriverOptions",
    "Exec",
    "ExecHandle",
    "ExecSettings",
    "ExitDetail",
    "ExplainsExit",
    "Handle",
    "Limits",
    "LogConfig",
    "Mock",
    "MockHandle",
    "Mount",
    "NetworkManager",
    "PortMapping",
    "RawExec",
    "RawExecHandle",
    "StartError",
    "TaskSpec",
    "UserPolicy",
    "attributes",
    "available",
    "exit_detail",
    "fingerprint",
    "log_paths",
    "oom_killed",
    "open_log",
    "signal_number",
]


@dataclass(frozen=True)
class DriverOptions:
    """The client's settings for its drivers (Nomad's plugin options)."""

    docker_endpoint: str = ""  # Nomad's docker `endpoint`; else DOCKER_HOST, else the default socket
    docker_volumes_enabled: bool = False  # Nomad's docker `volumes { enabled }`
    exec: ExecSettings = field(default_factory=ExecSettings)  # exec's chroot, cgroups; users for both exec drivers
    docker_infra_image: str = ""  # Nomad's docker `infra_image` (empty: docker_pause's default)


def available(names: tuple[str, ...], options: DriverOptions | None = None) -> dict[str, Driver]:
    chosen = options or DriverOptions()
    known: dict[str, Callable[[], Driver]] = {
        "raw_exec": lambda: RawExec(chosen.exec.users),
        "exec": lambda: Exec(chosen.exec),
        "mock": Mock,
        "docker": lambda: Docker(chosen.docker_endpoint, chosen.docker_volumes_enabled, chosen.docker_infra_image),
    }
    return {name: known[name]() for name in names}


@runtime_checkable
class Fingerprints(Protocol):
    """A driver that finds out whether it can run tasks here (docker: is the daemon up)."""

    def fingerprint(self) -> dict[str, Any]: ...


@runtime_checkable
class NetworkManager(Protocol):
    """A driver that owns a bridge/none group's network namespace when the group has its tasks
    (Nomad's DriverNetworkManager; docker: a pause container). create_network returns the PID
    of a process in the namespace; the client attaches it by path for the other tasks."""

    def create_network(self, alloc_id: str, alloc_dir: Path) -> int: ...

    def destroy_network(self, alloc_id: str) -> None: ...


ALWAYS_HEALTHY = {"Detected": True, "Healthy": True, "HealthDescription": "Healthy", "Attributes": {}}


def _found(name: str, driver: Driver) -> dict[str, Any]:
    if isinstance(driver, Fingerprints):
        return driver.fingerprint()
    if name == "exec":
        reason = unusable_reason()
        if reason is not None:  # exec without root or cgroups: there, but neither detected nor healthy
            return {"Detected": False, "Healthy": False, "HealthDescription": reason, "Attributes": {}}
    return dict(ALWAYS_HEALTHY)


def fingerprint(drivers: dict[str, Driver]) -> dict[str, Any]:
    """Node.Drivers: only the drivers this client has, so jobs needing others go elsewhere; one
    that cannot run tasks here (docker with its daemon down, exec without root or cgroups) is
    listed but not healthy, and keeps jobs away too."""
    return {name: _found(name, driver) for name, driver in drivers.items()}


def attributes(found: dict[str, Any]) -> dict[str, str]:
    """The node attributes the drivers add: `driver.<name>` for each detected one, and the
    attributes it reports (driver.docker.version …)."""
    out: dict[str, str] = {}
    for name, info in found.items():
        if info.get("Detected"):
            out[f"driver.{name}"] = "1"
            out.update({str(k): str(v) for k, v in (info.get("Attributes") or {}).items()})
    return out
