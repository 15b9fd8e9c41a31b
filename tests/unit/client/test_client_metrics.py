"""Nomad's nomad.client.* gauges from a fake agent state: values, Nomad's labels, the JSON view's
dotted names, and nothing before the node has registered."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from app.metrics.nomad_json import to_nomad_json
from app.metrics.timings import NOMAD_NAMES
from client.metrics import AllocFacts, ClientCollector, NodeFacts

pytestmark = pytest.mark.unit

NODE_ID = "6f1c1b9e-0000-4000-8000-000000000001"
NODE: dict[str, Any] = {
    "ID": NODE_ID,
    "Datacenter": "dc2",
    "NodeClass": "",
    "NodePool": "gpu",
    "NodeResources": {"Cpu": {"CpuShares": 4000}, "Memory": {"MemoryMB": 8192}, "Disk": {"DiskMB": 50000}},
    "ReservedResources": {"Cpu": {"CpuShares": 100}, "Memory": {"MemoryMB": 256}, "Disk": {"DiskMB": 1000}},
}
BASE = {"node_id": NODE_ID, "datacenter": "dc2", "node_class": "none", "node_pool": "gpu"}
HOST: dict[str, Any] = {
    "Memory": {"Total": 8_000_000, "Available": 5_000_000, "Used": 3_000_000, "Free": 2_000_000},
    "CPU": [
        {"CPU": "cpu0", "User": 10.0, "System": 5.0, "Idle": 85.0, "TotalPercent": 15.0, "TotalTicks": 300.0},
        {"CPU": "cpu1", "User": 1.0, "System": 1.0, "Idle": 98.0, "TotalPercent": 2.0, "TotalTicks": 40.0},
    ],
    "DiskStats": [
        {
            "Device": "/dev/sda1",
            "Size": 100,
            "Used": 40,
            "Available": 60,
            "UsedPercent": 40.0,
            "InodesUsedPercent": 3.0,
        },
        # The same device bind-mounted elsewhere: one disk, as Nomad labels it.
        {
            "Device": "/dev/sda1",
            "Size": 100,
            "Used": 40,
            "Available": 60,
            "UsedPercent": 40.0,
            "InodesUsedPercent": 3.0,
        },
        {
            "Device": "/dev/sdb",
            "Size": 500,
            "Used": 50,
            "Available": 450,
            "UsedPercent": 10.0,
            "InodesUsedPercent": 1.0,
        },
    ],
    "Uptime": 3600,
}


def alloc(status: str, cpu: int, memory: int, disk: int, *, stopping: bool = False) -> AllocFacts:
    body = {
        "Resources": {"CPU": cpu, "MemoryMB": memory, "DiskMB": disk},
        "AllocatedResources": {"Shared": {"DiskMB": disk}},
    }
    return AllocFacts.of(body, status, stopping, status in ("complete", "failed", "lost"))


ALLOCS = [
    alloc("running", 500, 256, 300),
    alloc("pending", 250, 128, 150),
    alloc("running", 1000, 1000, 1000, stopping=True),  # the servers stopped it: holds nothing
    alloc("complete", 700, 700, 700),
    alloc("failed", 700, 700, 700),
    alloc("lost", 700, 700, 700),
]


def scrape(collector: ClientCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def key(name: str, **extra: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted({**BASE, **extra}.items()))


def collector(registered: dict[str, Any] | None = NODE) -> ClientCollector:
    return ClientCollector(
        lambda: None if registered is None else NodeFacts.of(registered), lambda: ALLOCS, lambda: HOST
    )


def test_allocated_and_unallocated_count_only_allocations_still_holding_resources() -> None:
    got = scrape(collector())
    assert got[key("nomad_client_allocated_cpu")] == 750
    assert got[key("nomad_client_allocated_memory")] == 384
    assert got[key("nomad_client_allocated_disk")] == 450
    assert got[key("nomad_client_unallocated_cpu")] == 4000 - 100 - 750
    assert got[key("nomad_client_unallocated_memory")] == 8192 - 256 - 384
    assert got[key("nomad_client_unallocated_disk")] == 50000 - 1000 - 450


def test_allocation_counts_follow_nomads_client_statuses() -> None:
    got = scrape(collector())
    assert got[key("nomad_client_allocations_running")] == 2
    assert got[key("nomad_client_allocations_pending")] == 1
    assert got[key("nomad_client_allocations_terminal")] == 2  # complete and failed; lost is the servers' word
    assert not any(name.endswith(("_blocked", "_migrating")) for name, _ in got)


def test_host_gauges_carry_nomads_labels_per_cpu_and_per_disk() -> None:
    got = scrape(collector())
    assert got[key("nomad_client_host_memory_total")] == 8_000_000
    assert got[key("nomad_client_host_memory_available")] == 5_000_000
    assert got[key("nomad_client_host_memory_used")] == 3_000_000
    assert got[key("nomad_client_host_memory_free")] == 2_000_000
    assert got[key("nomad_client_uptime")] == 3600
    assert got[key("nomad_client_host_cpu_user", cpu="cpu0")] == 10.0
    assert got[key("nomad_client_host_cpu_system", cpu="cpu0")] == 5.0
    assert got[key("nomad_client_host_cpu_idle", cpu="cpu1")] == 98.0
    assert got[key("nomad_client_host_cpu_total", cpu="cpu1")] == 2.0
    assert got[key("nomad_client_host_cpu_total_percent", cpu="cpu0")] == 15.0
    assert got[key("nomad_client_host_cpu_total_ticks", cpu="cpu0")] == 300.0
    assert got[key("nomad_client_host_disk_size", disk="/dev/sdb")] == 500
    assert got[key("nomad_client_host_disk_used", disk="/dev/sda1")] == 40
    assert got[key("nomad_client_host_disk_available", disk="/dev/sdb")] == 450
    assert got[key("nomad_client_host_disk_used_percent", disk="/dev/sda1")] == 40.0
    assert got[key("nomad_client_host_disk_inodes_percent", disk="/dev/sdb")] == 1.0
    disks = [dict(labels)["disk"] for name, labels in got if name == "nomad_client_host_disk_size"]
    assert sorted(disks) == ["/dev/sda1", "/dev/sdb"]


def test_node_class_is_kept_when_set() -> None:
    got = scrape(collector({**NODE, "NodeClass": "batch"}))
    labels = dict(next(labels for name, labels in got if name == "nomad_client_uptime"))
    assert labels["node_class"] == "batch"


def test_nothing_is_reported_before_the_node_registers() -> None:
    host_read: list[bool] = []

    def host() -> dict[str, Any]:
        host_read.append(True)
        return HOST

    quiet = ClientCollector(lambda: None, lambda: ALLOCS, host)
    assert scrape(quiet) == {}
    assert host_read == []


def test_json_view_shows_nomads_dotted_names() -> None:
    body = to_nomad_json(collector().collect(), NOMAD_NAMES, datetime(2026, 11, 26, tzinfo=UTC))
    gauges = {(g["Name"], tuple(sorted(g["Labels"].items()))): g["Value"] for g in body["Gauges"]}
    assert gauges[("nomad.client.allocated.cpu", tuple(sorted(BASE.items())))] == 750
    assert gauges[("nomad.client.host.cpu.user", tuple(sorted({**BASE, "cpu": "cpu0"}.items())))] == 10.0
    assert gauges[("nomad.client.allocations.running", tuple(sorted(BASE.items())))] == 2


def test_registration_does_not_sample_the_host() -> None:
    # The registry checks names through describe(); collect() would sample the CPUs for nothing.
    host_read: list[bool] = []

    def host() -> dict[str, Any]:
        host_read.append(True)
        return HOST

    registry = CollectorRegistry()
    registry.register(ClientCollector(lambda: NodeFacts.of(NODE), lambda: [], host))
    assert host_read == []


def test_an_unreadable_host_still_reports_the_allocations() -> None:
    def unreadable() -> dict[str, Any]:
        raise OSError("no /proc")

    got = scrape(ClientCollector(lambda: NodeFacts.of(NODE), lambda: ALLOCS, unreadable))
    assert got[key("nomad_client_allocated_cpu")] == 750
    assert not any(name.startswith("nomad_client_host_") for name, _ in got)
