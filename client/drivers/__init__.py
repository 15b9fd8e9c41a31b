"""Task drivers. Each driver is a module; this package knows which ones exist and what a node
reports about them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    Driver,
    ExitDetail,
    ExplainsExit,
    Handle,
    Limits,
    Mount,
    PortMapping,
    StartError,
    TaskSpec,
    exit_detail,
    log_paths,
    signal_number,
)
from client.drivers.docker import Docker, DockerHandle
from client.drivers.mock import Mock, MockHandle
from client.drivers.raw_exec import RawExec, RawExecHandle

__all__ = [
    "DEFAULT_KILL_SIGNAL",
    "KILLED",
    "Docker",
    "DockerHandle",
    "Driver",
    "DriverOptions",
    "ExitDetail",
    "ExplainsExit",
    "Handle",
    "Limits",
    "Mock",
    "MockHandle",
    "Mount",
    "PortMapping",
    "RawExec",
    "RawExecHandle",
    "StartError",
    "TaskSpec",
    "attributes",
    "available",
    "exit_detail",
    "fingerprint",
    "log_paths",
    "signal_number",
]


@dataclass(frozen=True)
class DriverOptions:
    """The client's settings for its drivers (Nomad's plugin options)."""

    docker_endpoint: str = ""  # Nomad's docker `endpoint`; else DOCKER_HOST, else the default socket
    docker_volumes_enabled: bool = False  # Nomad's docker `volumes { enabled }`


def available(names: tuple[str, ...], options: DriverOptions = DriverOptions()) -> dict[str, Driver]:
    known: dict[str, Callable[[], Driver]] = {
        "raw_exec": RawExec,
        "mock": Mock,
        "docker": lambda: Docker(options.docker_endpoint, options.docker_volumes_enabled),
    }
    return {name: known[name]() for name in names}


@runtime_checkable
class Fingerprints(Protocol):
    """A driver that finds out whether it can run tasks here (docker: is the daemon up)."""

    def fingerprint(self) -> dict[str, Any]: ...


ALWAYS_HEALTHY = {"Detected": True, "Healthy": True, "HealthDescription": "Healthy", "Attributes": {}}


def fingerprint(drivers: dict[str, Driver]) -> dict[str, Any]:
    """Node.Drivers: only the drivers this client has, so jobs needing others go elsewhere; one
    that is not healthy (docker with its daemon down) keeps jobs away too."""
    return {
        name: driver.fingerprint() if isinstance(driver, Fingerprints) else dict(ALWAYS_HEALTHY)
        for name, driver in drivers.items()
    }


def attributes(found: dict[str, Any]) -> dict[str, str]:
    """The node attributes the drivers add: `driver.<name>` for each detected one, and the
    attributes it reports (driver.docker.version …)."""
    out: dict[str, str] = {}
    for name, info in found.items():
        if info.get("Detected"):
            out[f"driver.{name}"] = "1"
            out.update({str(k): str(v) for k, v in (info.get("Attributes") or {}).items()})
    return out
