"""Nomad-style node attributes and resources from the machine the client runs on."""

from __future__ import annotations

import os
import platform
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import psutil

from client.config import ClientConfig
from client.network.interfaces import device_of, interface_address

DEFAULT_MHZ = 1000.0


@dataclass(frozen=True)
class Fingerprint:
    attributes: dict[str, str]
    cpu_mhz: int
    memory_mb: int
    disk_mb: int
    cores: tuple[int, ...] = ()  # the core IDs tasks may reserve whole (NodeResources.Cpu.ReservableCpuCores)
    device: str = ""  # the interface the node's address is on (NodeResources.Networks[0].Device)


def cpu_mhz_per_core() -> float:
    """Nominal MHz of one core: /proc/cpuinfo, else psutil, else a modest guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    freq = psutil.cpu_freq()
    return float(freq.max or freq.current) if freq and (freq.max or freq.current) else DEFAULT_MHZ


def local_ip() -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("10.255.255.255", 1))  # no packet is sent; it picks the outbound address
            return str(sock.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def advertised(config: ClientConfig) -> tuple[str, str]:
    """(device, address) the node advertises: network_interface's (checked when the config was
    built: an interface gone since raises InterfaceError), else the default route's."""
    if config.network_interface:
        return config.network_interface, interface_address(config.network_interface)
    address = local_ip()
    return device_of(address), address


def host_network(found: Fingerprint) -> dict[str, str]:
    """NodeResources.Networks' entry for the advertised address, as Nomad's network fingerprint
    makes it (host mode, the device, the address as a host-sized CIDR)."""
    address = found.attributes["unique.network.ip-address"]
    bits = 128 if ":" in address else 32
    return {"Mode": "host", "Device": found.device, "IP": address, "CIDR": f"{address}/{bits}"}


def reservable_cores() -> tuple[int, ...]:
    """The cores this client may hand out whole: those it may run on itself."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def fingerprint(config: ClientConfig) -> Fingerprint:
    cores = os.cpu_count() or 1
    reservable = reservable_cores()
    mhz = cpu_mhz_per_core()
    memory_mb = psutil.virtual_memory().total // (1024 * 1024)
    allocs = config.allocs_root()
    allocs.mkdir(parents=True, exist_ok=True)
    disk_mb = shutil.disk_usage(allocs).free // (1024 * 1024)  # allocations' disk: the alloc dir's
    device, address = advertised(config)
    total_mhz = config.cpu_total_mhz or int(mhz * cores)
    attributes = {
        "kernel.name": platform.system().lower(),
        "kernel.version": platform.release(),
        "kernel.arch": platform.machine(),
        "cpu.arch": platform.machine(),
        "cpu.numcores": str(cores),
        "cpu.reservablecores": str(len(reservable)),
        "cpu.frequency": str(int(mhz)),
        "cpu.totalcompute": str(total_mhz),
        "memory.totalbytes": str((config.memory_total_mb or memory_mb) * 1024 * 1024),
        "os.name": _os_name(),
        "unique.hostname": socket.gethostname(),
        "unique.network.ip-address": address,
        "unique.storage.volume": str(allocs.resolve()),
        "nomad.version": "corral",
    }
    memory = config.memory_total_mb or memory_mb
    return Fingerprint(attributes, total_mhz, memory, config.disk_total_mb or disk_mb, reservable, device)


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("ID="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.system().lower()
