"""Resource usage as Nomad's client reports it: an allocation's (AllocResourceUsage, summed over
its tasks' process trees, read from /proc through psutil) and the host's (HostStats)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

SAMPLE_S = 0.1  # CPU percentages need two readings; this is the gap between them
MEMORY_MEASURED = ["RSS"]  # Nomad's raw_exec adds Swap; it is not read here
CPU_MEASURED = ["System Mode", "User Mode", "Percent"]


def _cpu_mhz() -> float:
    with contextlib.suppress(Exception):  # no cpufreq in many containers
        found = psutil.cpu_freq()
        if found is not None and found.current:
            return float(found.current)
    return 0.0


def _empty_usage(measured: bool) -> dict[str, Any]:
    return {
        "MemoryStats": {
            "RSS": 0,
            "Cache": 0,
            "Swap": 0,
            "MappedFile": 0,
            "Usage": 0,
            "MaxUsage": 0,
            "KernelUsage": 0,
            "KernelMaxUsage": 0,
            "Measured": list(MEMORY_MEASURED) if measured else [],
        },
        "CpuStats": {
            "SystemMode": 0.0,
            "UserMode": 0.0,
            "TotalTicks": 0.0,
            "ThrottledPeriods": 0,
            "ThrottledTime": 0,
            "Percent": 0.0,
            "Measured": list(CPU_MEASURED) if measured else [],
        },
        "DeviceStats": [],
    }


def _add(total: dict[str, Any], part: dict[str, Any]) -> None:
    for group in ("MemoryStats", "CpuStats"):
        for key, value in part[group].items():
            if key == "Measured":
                total[group][key] = [*total[group][key], *(v for v in value if v not in total[group][key])]
            else:
                total[group][key] += value


def _tree(pid: int) -> list[psutil.Process]:
    """The task's processes: what the driver's wrapper runs, and their children."""
    try:
        root = psutil.Process(pid)
        return root.children(recursive=True) or [root]
    except psutil.Error:
        return []


def _cpu_seconds(process: psutil.Process) -> tuple[float, float] | None:
    try:
        times = process.cpu_times()
    except psutil.Error:
        return None
    return times.user, times.system


def _usage_of(process: psutil.Process, first: tuple[float, float] | None, mhz: float) -> dict[str, Any] | None:
    second = _cpu_seconds(process)
    try:
        memory = process.memory_info()
    except psutil.Error:
        return None  # gone since the first reading
    usage = _empty_usage(measured=True)
    usage["MemoryStats"].update(RSS=memory.rss, Usage=memory.rss)
    if first is not None and second is not None:
        user = max(0.0, second[0] - first[0]) / SAMPLE_S * 100
        system = max(0.0, second[1] - first[1]) / SAMPLE_S * 100
        usage["CpuStats"].update(
            UserMode=user, SystemMode=system, Percent=user + system, TotalTicks=(user + system) / 100 * mhz
        )
    return usage


def alloc_usage(tasks: Mapping[str, list[int]]) -> dict[str, Any]:
    """Nomad's AllocResourceUsage: each task's TaskResourceUsage (summed over the process trees
    rooted at its pids; none, as a mock task has, measures nothing) and their sum. One CPU
    sample of SAMPLE_S for all the tasks together."""
    trees = {name: [p for pid in pids for p in _tree(pid)] for name, pids in tasks.items()}
    before = {p.pid: _cpu_seconds(p) for processes in trees.values() for p in processes}
    if before:
        time.sleep(SAMPLE_S)
    mhz, now, total, per_task = _cpu_mhz(), time.time_ns(), _empty_usage(measured=False), {}
    for name, processes in trees.items():
        task_total, per_pid = _empty_usage(measured=bool(tasks[name])), {}
        for process in processes:
            usage = _usage_of(process, before.get(process.pid), mhz)
            if usage is not None:
                per_pid[str(process.pid)] = usage
                _add(task_total, usage)
        per_task[name] = {"ResourceUsage": task_total, "Timestamp": now, "Pids": per_pid}
        _add(total, task_total)
    return {"ResourceUsage": total, "Tasks": per_task, "Timestamp": now}


def _disk(path: str, device: str) -> dict[str, Any] | None:
    try:
        usage = psutil.disk_usage(path)
        inodes = os.statvfs(path)
    except OSError:
        return None
    used_inodes = inodes.f_files - inodes.f_ffree
    return {
        "Device": device,
        "Mountpoint": path,
        "Size": usage.total,
        "Used": usage.used,
        "Available": usage.free,
        "UsedPercent": usage.percent,
        "InodesUsedPercent": used_inodes / inodes.f_files * 100 if inodes.f_files else 0.0,
    }


def host_stats(data_dir: Path) -> dict[str, Any]:
    """Nomad's HostStats from /proc on this host: memory, per-CPU use over a short sample,
    each mounted disk, the disk holding the allocation directories, uptime."""
    memory = psutil.virtual_memory()
    per_cpu = psutil.cpu_times_percent(interval=SAMPLE_S, percpu=True)
    mhz = _cpu_mhz()
    cpus = []
    for index, sample in enumerate(per_cpu):
        busy = max(0.0, 100.0 - sample.idle)
        cpus.append(
            {
                "CPU": f"cpu{index}",
                "User": sample.user,
                "System": sample.system,
                "Idle": sample.idle,
                "TotalPercent": busy,
                "TotalTicks": busy / 100 * mhz,
            }
        )
    disks = [
        found
        for part in psutil.disk_partitions(all=False)
        if (found := _disk(part.mountpoint, part.device)) is not None
    ]
    return {
        "Memory": {"Total": memory.total, "Available": memory.available, "Used": memory.used, "Free": memory.free},
        "CPU": cpus,
        "DiskStats": disks,
        "AllocDirStats": _disk(str(data_dir.resolve()), ""),
        "DeviceStats": [],
        "Uptime": int(time.time() - psutil.boot_time()),
        "Timestamp": time.time_ns(),
        "CPUTicksConsumed": sum(c["TotalTicks"] for c in cpus),
    }
