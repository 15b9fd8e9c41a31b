"""Client configuration: flags, or a JSON config file (flags win), with Nomad's defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

DRIVERS = ("raw_exec", "mock")


@dataclass(frozen=True)
class GcConfig:
    """Client-side GC (seed 000): Nomad's defaults."""

    interval_s: float = 60.0
    disk_usage_threshold: float = 80.0
    inode_usage_threshold: float = 70.0
    max_allocs: int = 50
    parallel_destroys: int = 2


@dataclass(frozen=True)
class ClientConfig:
    server: str = "http://127.0.0.1:4646"
    data_dir: Path = Path(".corral-client")
    name: str = ""
    datacenter: str = "dc1"
    node_class: str = ""
    node_pool: str = "default"
    meta: dict[str, str] = field(default_factory=dict)
    drivers: tuple[str, ...] = DRIVERS
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


def build(file_values: dict[str, Any], flags: dict[str, Any], gc_flags: dict[str, Any]) -> ClientConfig:
    """Defaults, then the file, then flags that were given (None means not given)."""
    values = {**file_values, **_given(flags)}
    gc_file = values.pop("gc", {}) or {}
    if not isinstance(gc_file, dict):
        raise ConfigError("gc: must be an object")
    gc_values = {**gc_file, **_given(gc_flags)}
    known = {f.name for f in fields(ClientConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown client setting(s): {', '.join(unknown)}")
    try:
        gc = replace(GcConfig(), **{k.removeprefix("gc_"): v for k, v in gc_values.items()})
    except TypeError as err:
        raise ConfigError(f"gc: {err}") from err
    config = replace(ClientConfig(), **values, gc=gc)
    config = replace(
        config, data_dir=Path(config.data_dir).resolve(), drivers=tuple(config.drivers), meta=dict(config.meta)
    )
    bad = sorted(set(config.drivers) - set(DRIVERS))
    if bad:
        raise ConfigError(f"drivers: unknown driver(s) {', '.join(bad)}; choose from {', '.join(DRIVERS)}")
    if config.gc.max_allocs < 1 or config.gc.parallel_destroys < 1 or config.gc.interval_s <= 0:
        raise ConfigError("gc: max_allocs and parallel_destroys must be at least 1 and interval_s positive")
    return config
