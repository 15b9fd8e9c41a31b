"""Rules for what a group or task asks of a node: compute, memory, disk and ports."""

from __future__ import annotations

from collections.abc import Sequence

from app.jobspec.errors import FieldError, quote
from app.jobspec.model import EphemeralDisk, Network, Resources
from app.jobspec.rules.checks import Problems, at_least, between, required

MIN_CPU = 1
MIN_MEMORY_MB = 10
# Nomad keeps these amounts in Go ints; corral in INTEGER columns and int casts.
MAX_AMOUNT = 2**31 - 1
MAX_PORT = 65535
# -1 asks the driver to map the container port to the same number as the host port.
MIN_PORT_TO = -1


def check_resources(resources: Resources, path: str) -> Problems:
    yield from _at_most(resources.cpu, f"{path}.CPU")
    yield from _at_most(resources.memory_mb, f"{path}.MemoryMB")
    yield from _at_most(resources.memory_max_mb, f"{path}.MemoryMaxMB")
    yield from _at_most(resources.cores, f"{path}.Cores")
    if resources.disk_mb is not None:
        yield from at_least(resources.disk_mb, 0, f"{path}.DiskMB")
        yield from _at_most(resources.disk_mb, f"{path}.DiskMB")
    yield from at_least(resources.cores, 0, f"{path}.Cores")
    if resources.cores > 0 and resources.cpu > 0:
        yield FieldError(
            f"{path}.Cores",
            f"cannot be combined with CPU; ask for either, got Cores {resources.cores} and CPU {resources.cpu}",
        )
    elif resources.cores == 0:
        yield from at_least(resources.cpu, MIN_CPU, f"{path}.CPU")
    yield from at_least(resources.memory_mb, MIN_MEMORY_MB, f"{path}.MemoryMB")
    # Zero means "no oversubscription", Nomad's way of leaving MemoryMaxMB unset.
    if resources.memory_max_mb != 0 and resources.memory_max_mb < resources.memory_mb:
        yield FieldError(
            f"{path}.MemoryMaxMB",
            f"must be at least MemoryMB ({resources.memory_mb}) when set, got {resources.memory_max_mb}",
        )


def _at_most(value: int, path: str) -> Problems:
    if value > MAX_AMOUNT:
        yield FieldError(path, f"must be at most {MAX_AMOUNT}, got {value}")


def check_ephemeral_disk(disk: EphemeralDisk, path: str) -> Problems:
    yield from at_least(disk.size_mb, 1, f"{path}.SizeMB")
    yield from _at_most(disk.size_mb, f"{path}.SizeMB")


def check_networks(networks: Sequence[Network], path: str) -> Problems:
    if len(networks) > 1:
        yield FieldError(path, f"must contain at most one network, got {len(networks)}")
    for index, network in enumerate(networks):
        yield from _check_network(network, f"{path}[{index}]")


def _check_network(network: Network, path: str) -> Problems:
    labels: set[str] = set()
    static: dict[tuple[str, int], str] = {}
    for kind, ports in (("ReservedPorts", network.reserved_ports), ("DynamicPorts", network.dynamic_ports)):
        for index, port in enumerate(ports):
            item = f"{path}.{kind}[{index}]"
            yield from required(port.label, f"{item}.Label")
            if port.label and port.label in labels:
                yield FieldError(f"{item}.Label", f"duplicate port label {quote(port.label)}")
            labels.add(port.label)
            if kind == "ReservedPorts":
                yield from _check_static_value(port.value, port.host_network, port.label, static, item)
            elif port.value != 0:
                yield FieldError(
                    f"{item}.Value",
                    f"must be 0 for a dynamic port (use ReservedPorts for a static one), got {port.value}",
                )
            yield from between(port.to, MIN_PORT_TO, MAX_PORT, f"{item}.To")


def _check_static_value(
    value: int, host_network: str, label: str, static: dict[tuple[str, int], str], path: str
) -> Problems:
    problems = list(between(value, 1, MAX_PORT, f"{path}.Value"))
    yield from problems
    if problems:
        return
    owner = static.setdefault((host_network, value), label)
    if owner != label:
        yield FieldError(f"{path}.Value", f"port {value} is already reserved by {quote(owner)}")
