"""Task drivers. Each driver is a module; this package knows which ones exist and what a node
reports about them."""

from __future__ import annotations

from typing import Any

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    Driver,
    Handle,
    Limits,
    Mount,
    PortMapping,
    StartError,
    TaskSpec,
    log_paths,
    oom_killed,
    signal_number,
)
from client.drivers.exec import Exec, ExecHandle, ExecSettings, unusable_reason
from client.drivers.mock import Mock, MockHandle
from client.drivers.raw_exec import RawExec, RawExecHandle
from client.drivers.users import UserPolicy

__all__ = [
    "DEFAULT_KILL_SIGNAL",
    "KILLED",
    "Driver",
    "Exec",
    "ExecHandle",
    "ExecSettings",
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
    "UserPolicy",
    "available",
    "fingerprint",
    "log_paths",
    "oom_killed",
    "signal_number",
    "usable",
]


def available(names: tuple[str, ...], exec_settings: ExecSettings | None = None) -> dict[str, Driver]:
    settings = exec_settings or ExecSettings()
    known: dict[str, Driver] = {"raw_exec": RawExec(settings.users), "exec": Exec(settings), "mock": Mock()}
    return {name: known[name] for name in names}


def _health(name: str) -> tuple[bool, str]:
    """Whether the driver can run tasks on this host, and Nomad's HealthDescription."""
    if name == "exec":
        reason = unusable_reason()
        if reason is not None:
            return False, reason
    return True, "Healthy"


def fingerprint(names: tuple[str, ...]) -> dict[str, Any]:
    """Node.Drivers: only the drivers this client has, so jobs needing others go elsewhere; a
    driver this host cannot run (exec without root or cgroups) is there but neither detected
    nor healthy, so nothing is placed for it."""
    found: dict[str, Any] = {}
    for name in names:
        healthy, description = _health(name)
        found[name] = {"Detected": healthy, "Healthy": healthy, "HealthDescription": description, "Attributes": {}}
    return found


def usable(names: tuple[str, ...]) -> tuple[str, ...]:
    """The drivers that report `driver.<name>` among the node's attributes (the healthy ones)."""
    return tuple(name for name in names if _health(name)[0])
