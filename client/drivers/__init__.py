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
    LogConfig,
    Mount,
    PortMapping,
    StartError,
    TaskSpec,
    log_paths,
    signal_number,
)
from client.drivers.mock import Mock, MockHandle
from client.drivers.raw_exec import RawExec, RawExecHandle

__all__ = [
    "DEFAULT_KILL_SIGNAL",
    "KILLED",
    "Driver",
    "Handle",
    "Limits",
    "LogConfig",
    "Mock",
    "MockHandle",
    "Mount",
    "PortMapping",
    "RawExec",
    "RawExecHandle",
    "StartError",
    "TaskSpec",
    "available",
    "fingerprint",
    "log_paths",
    "signal_number",
]


def available(names: tuple[str, ...]) -> dict[str, Driver]:
    known: dict[str, Driver] = {"raw_exec": RawExec(), "mock": Mock()}
    return {name: known[name] for name in names}


def fingerprint(names: tuple[str, ...]) -> dict[str, Any]:
    """Node.Drivers: only the drivers this client has, so jobs needing others go elsewhere."""
    return {
        name: {"Detected": True, "Healthy": True, "HealthDescription": "Healthy", "Attributes": {}} for name in names
    }
