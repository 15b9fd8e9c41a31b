"""Nomad's client gauges (`nomad.client.*`), computed when Prometheus scrapes `corral client`'s
own /v1/metrics: the host's memory, CPUs, disks and uptime (read from /proc through psutil, as
the client's host stats are), and what this node's live allocations hold and leave free.

Nomad's client sets these every collection interval from a background loop; here a custom
collector reads them at scrape time, so nothing runs between scrapes and no figure is stale.
Labels are Nomad's: node_id, datacenter, node_class ("none" when unset) and node_pool; host CPU
gauges add `cpu`, host disk gauges add `disk` (the device)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psutil
import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from app.metrics.timings import prometheus_name

log = structlog.get_logger(__name__)

BASE_LABELS = ("node_id", "datacenter", "node_class", "node_pool")
UNITS = {"cpu": "MHz", "memory": "MB", "disk": "MB"}  # as the node registers them
RESOURCES = tuple(UNITS)
MEMORY = ("total", "available", "used", "free")
CPU = (
    ("total", "TotalPercent"),  # Nomad keeps it beside total_percent for older dashboards
    ("total_percent", "TotalPercent"),
    ("total_ticks", "TotalTicks"),
    ("user", "User"),
    ("system", "System"),
    ("idle", "Idle"),
)
DISK = (
    ("size", "Size"),
    ("used", "Used"),
    ("available", "Available"),
    ("used_percent", "UsedPercent"),
    ("inodes_percent", "InodesUsedPercent"),
)
# Nomad's pending allocation is "blocked" while it waits for a previous allocation and
# "migrating" while it copies that allocation's ephemeral disk; this client does neither.
ALLOCATION_STATES = ("running", "pending", "terminal")

CPU_MODES = ("user", "system", "idle")
HELP = {
    **{f"nomad.client.host.memory.{k}": f"Host memory {k} (bytes)." for k in MEMORY},
    **{f"nomad.client.host.cpu.{k}": f"Percent of the CPU's time {k} over a short sample." for k in CPU_MODES},
    "nomad.client.host.cpu.total": "Percent of the CPU's time busy over a short sample.",
    "nomad.client.host.cpu.total_percent": "Percent of the CPU's time busy over a short sample.",
    "nomad.client.host.cpu.total_ticks": "Busy share of the CPU's clock over a short sample (MHz).",
    **{f"nomad.client.host.disk.{k}": f"Mounted disk {k.replace('_', ' ')}." for k, _ in DISK},
    "nomad.client.uptime": "Seconds since the host booted.",
    **{f"nomad.client.allocated.{r}": f"{r} held by this node's live allocations ({u})." for r, u in UNITS.items()},
    **{f"nomad.client.unallocated.{r}": f"{r} of this node left to schedule ({u})." for r, u in UNITS.items()},
    **{f"nomad.client.allocations.{s}": f"Allocations on this node that are {s}." for s in ALLOCATION_STATES},
}
PROMETHEUS_NAMES = {nomad: prometheus_name(nomad) for nomad in HELP}  # also maps them for the JSON view


@dataclass(frozen=True)
class NodeFacts:
    """What the node registered with: its labels, and its total and reserved resources."""

    node_id: str
    datacenter: str
    node_class: str
    node_pool: str
    total: Mapping[str, int]
    reserved: Mapping[str, int]

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> NodeFacts:
        """From the registration body the client sent (Nomad's Node)."""
        return cls(
            str(body["ID"]),
            str(body.get("Datacenter") or "dc1"),
            str(body.get("NodeClass") or ""),
            str(body.get("NodePool") or "default"),
            _resources(body.get("NodeResources") or {}),
            _resources(body.get("ReservedResources") or {}),
        )

    def labels(self) -> list[str]:
        return [self.node_id, self.datacenter, self.node_class or "none", self.node_pool]


def _resources(section: Mapping[str, Any]) -> dict[str, int]:
    return {
        "cpu": int((section.get("Cpu") or {}).get("CpuShares") or 0),
        "memory": int((section.get("Memory") or {}).get("MemoryMB") or 0),
        "disk": int((section.get("Disk") or {}).get("DiskMB") or 0),
    }


@dataclass(frozen=True)
class AllocFacts:
    """One allocation the client runs: its client status, whether it still holds its resources
    (neither stopped by the servers nor finished here), and those resources."""

    client_status: str
    holds_resources: bool
    resources: Mapping[str, int]

    @classmethod
    def of(cls, alloc: Mapping[str, Any], client_status: str, stopping: bool, terminal: bool) -> AllocFacts:
        summed = alloc.get("Resources") or {}
        shared = (alloc.get("AllocatedResources") or {}).get("Shared") or {}
        resources = {
            "cpu": int(summed.get("CPU") or 0),
            "memory": int(summed.get("MemoryMB") or 0),
            "disk": int(shared.get("DiskMB") or summed.get("DiskMB") or 0),
        }
        return cls(client_status, not (stopping or terminal), resources)


class ClientCollector(Collector):
    """The gauges, read from the agent through three callables at each scrape. `node` is None
    until the client has registered: the allocation gauges need its resources and labels."""

    def __init__(
        self,
        node: Callable[[], NodeFacts | None],
        allocs: Callable[[], Iterable[AllocFacts]],
        host: Callable[[], Mapping[str, Any]],
    ) -> None:
        self._node, self._allocs, self._host = node, allocs, host

    def describe(self) -> Iterator[Metric]:
        # The registry checks names against this instead of collecting (which samples the CPUs).
        return (_family(name, ()) for name in HELP)

    def collect(self) -> Iterator[Metric]:
        node = self._node()
        if node is None:
            return
        labels = node.labels()
        try:
            host = self._host()
        except (OSError, psutil.Error) as err:  # Nomad's client also skips the host for that round
            log.warning("host stats unreadable; reporting allocation gauges only", error=repr(err))
        else:
            yield from host_families(host, labels)
        yield from allocation_families(node, list(self._allocs()), labels)


def host_families(stats: Mapping[str, Any], labels: list[str]) -> Iterator[Metric]:
    """Nomad's setGaugeForMemoryStats, setGaugeForCPUStats, setGaugeForDiskStats and
    setGaugeForUptime over one HostStats."""
    for key in MEMORY:
        yield _gauge(f"nomad.client.host.memory.{key}", labels, stats["Memory"][key.capitalize()])
    for suffix, field in CPU:
        family = _family(f"nomad.client.host.cpu.{suffix}", ("cpu",))
        for cpu in stats["CPU"]:
            family.add_metric([*labels, cpu["CPU"]], cpu[field])
        yield family
    disks = _one_per_device(stats["DiskStats"])
    for suffix, field in DISK:
        family = _family(f"nomad.client.host.disk.{suffix}", ("disk",))
        for disk in disks:
            family.add_metric([*labels, disk["Device"]], disk[field])
        yield family
    yield _gauge("nomad.client.uptime", labels, stats["Uptime"])


def _one_per_device(disks: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A device mounted at several places (bind mounts, a container's /etc/hosts) is one disk:
    Nomad labels by device alone, and Prometheus refuses a scrape with a repeated series."""
    seen: dict[str, Mapping[str, Any]] = {}
    for disk in disks:
        seen.setdefault(disk["Device"], disk)
    return list(seen.values())


def allocation_families(node: NodeFacts, allocs: list[AllocFacts], labels: list[str]) -> Iterator[Metric]:
    """Nomad's setGaugeForAllocationStats and emitClientMetrics' allocation counts."""
    holding = [a for a in allocs if a.holds_resources]
    for resource in RESOURCES:
        allocated = sum(a.resources[resource] for a in holding)
        yield _gauge(f"nomad.client.allocated.{resource}", labels, allocated)
        free = node.total[resource] - node.reserved[resource] - allocated
        yield _gauge(f"nomad.client.unallocated.{resource}", labels, free)
    counts = dict.fromkeys(ALLOCATION_STATES, 0)
    for alloc in allocs:
        state = "terminal" if alloc.client_status in ("complete", "failed") else alloc.client_status
        if state in counts:  # "lost" is the servers' verdict, which Nomad's client does not count
            counts[state] += 1
    for state, count in counts.items():
        yield _gauge(f"nomad.client.allocations.{state}", labels, count)


def _family(nomad_name: str, extra: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PROMETHEUS_NAMES[nomad_name], HELP[nomad_name], labels=[*BASE_LABELS, *extra])


def _gauge(nomad_name: str, labels: list[str], value: float) -> GaugeMetricFamily:
    family = _family(nomad_name, ())
    family.add_metric(labels, value)
    return family
