"""`corral alloc status -stats`: each task's resources with their measured use, and the memory
and CPU figures its client measured, in Nomad's layout."""

from __future__ import annotations

import math
from collections.abc import Mapping

from app.cli.support.output import columns
from app.wire.api.api_client import ResourceUsageJson
from app.wire.job import ResourcesSpec

IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
MIB = 1024 * 1024
MEMORY_FIELDS = {
    "RSS": "RSS",
    "Cache": "Cache",
    "Swap": "Swap",
    "Usage": "Usage",
    "Max Usage": "MaxUsage",
    "Kernel Usage": "KernelUsage",
    "Kernel Max Usage": "KernelMaxUsage",
}
CPU_PERCENTS = {"Percent": "Percent", "User Mode": "UserMode", "System Mode": "SystemMode"}
CPU_COUNTS = {"Throttled Periods": "ThrottledPeriods", "Throttled Time": "ThrottledTime"}


def ibytes(size: int) -> str:
    """go-humanize's IBytes, as Nomad prints sizes: '512 B', '4.0 KiB', '12 MiB'."""
    if size < 10:
        return f"{size} B"
    exponent = min(math.floor(math.log(size, 1024)), len(IEC) - 1)
    value = math.floor(size / 1024**exponent * 10 + 0.5) / 10
    return f"{value:.0f} {IEC[exponent]}" if value >= 10 else f"{value:.1f} {IEC[exponent]}"


def _number(stats: Mapping[str, object], key: str) -> float:
    """A figure of the stats by its key; 0 when the client measured none."""
    value = stats.get(key)
    return value if isinstance(value, int | float) else 0


def task_resources(resources: ResourcesSpec, usage: ResourceUsageJson | None) -> list[str]:
    """'Task Resources:' (used/asked CPU and memory), then the measured Memory and CPU Stats."""
    memory_stats = (usage or {}).get("MemoryStats") or {}
    cpu_stats = (usage or {}).get("CpuStats") or {}
    cpu = f"{math.floor(cpu_stats.get('TotalTicks') or 0)}/{resources.get('CPU', 0)}"
    used = memory_stats.get("RSS") or memory_stats.get("Usage") or 0
    memory = f"{ibytes(int(used))}/{ibytes(int(resources.get('MemoryMB', 0)) * MIB)}"
    lines = ["Task Resources:", *columns([["CPU", "Memory"], [f"{cpu} MHz", memory]])]
    measured = sorted(memory_stats.get("Measured") or [])
    if measured:
        values = [ibytes(int(_number(memory_stats, MEMORY_FIELDS.get(m, "")))) for m in measured]
        lines += ["", "Memory Stats", *columns([measured, values])]
    measured = sorted(cpu_stats.get("Measured") or [])
    if measured:
        values = [
            f"{_number(cpu_stats, CPU_PERCENTS[m]):.2f}%"
            if m in CPU_PERCENTS
            else str(cpu_stats.get(CPU_COUNTS.get(m, ""), 0))
            for m in measured
        ]
        lines += ["", "CPU Stats", *columns([measured, values])]
    return lines
