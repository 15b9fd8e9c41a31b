"""The one fit check. The scheduler ranks with it and the plan applier re-checks every
plan with it, so the two can never disagree about whether an allocation fits."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from app.structs import Node, NodeUsage, Resources

# Nomad's dimension names, as they appear in DimensionExhausted.
CPU, MEMORY, DISK, PORTS, CORES = "cpu", "memory", "disk", "network: port collision", "cores"


def exhausted_dimension(
    node: Node, usage: NodeUsage, ask: Resources, ports: Iterable[int] = (), cores: Collection[int] = ()
) -> str | None:
    """None when `ask` (and the host `ports` and whole `cores` it needs) fits on `node` on top
    of `usage`; otherwise the first dimension that does not fit."""
    allocatable, used = node.allocatable, usage.resources  # compared field by field: no Resources built
    if cores and (len(set(cores)) != len(cores) or not usage.cores.isdisjoint(cores)):
        return CORES
    if ask.cpu > allocatable.cpu - used.cpu:
        return CPU
    if ask.memory_mb > allocatable.memory_mb - used.memory_mb:
        return MEMORY
    if ask.disk_mb > allocatable.disk_mb - used.disk_mb:
        return DISK
    if not ports:
        return None
    wanted = [p for p in ports if p]
    if len(set(wanted)) != len(wanted) or any(p in usage.ports or p in node.reserved_ports for p in wanted):
        return PORTS
    return None


def add_usage(
    usage: NodeUsage, resources: Resources, ports: Iterable[int] = (), cores: Collection[int] = ()
) -> NodeUsage:
    held = usage.cores | frozenset(cores) if cores else usage.cores
    if not ports:  # most placements take no host port: keep the node's set as it is
        return NodeUsage(usage.resources + resources, usage.ports, held)
    return NodeUsage(usage.resources + resources, usage.ports | frozenset(p for p in ports if p), held)


def remove_usage(
    usage: NodeUsage, resources: Resources, ports: Iterable[int] = (), cores: Collection[int] = ()
) -> NodeUsage:
    held = usage.cores - frozenset(cores) if cores else usage.cores
    return NodeUsage(usage.resources - resources, usage.ports - frozenset(ports), held)
