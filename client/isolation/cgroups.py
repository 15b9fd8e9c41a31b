"""A task's control groups on a hybrid host: cgroup v1 hierarchies enforce the limits (memory,
CPU shares, the cores' cpuset) and count (pids, cpuacct); the freezer and a cgroup2 group (when
mounted) hold the whole process tree, so it can be listed and killed at once."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from client.drivers.base import Limits

ROOT = Path("/sys/fs/cgroup")
UNIFIED = ROOT / "unified"  # the cgroup2 mount of a hybrid layout
# The v1 controllers a task joins; memory, cpu and freezer are required for the driver to work.
CONTROLLERS = ("memory", "cpu", "cpuacct", "cpuset", "pids", "freezer")
REQUIRED = ("memory", "cpu", "freezer")
MIB = 1024 * 1024
MIN_CPU_SHARES = 2  # the kernel's floor for cpu.shares


@dataclass(frozen=True)
class LimitFiles:
    """The values written into a task's v1 groups, file name -> text, in writing order."""

    memory: tuple[tuple[str, str], ...]
    cpu: tuple[tuple[str, str], ...]
    cpuset_cpus: str  # "" keeps the parent's cpus


def limit_files(limits: Limits) -> LimitFiles:
    """Nomad's exec limits: the hard memory limit is memory_max when set (memory then becomes
    the soft limit), otherwise memory; CPU shares are the task's MHz; cores pin the cpuset."""
    memory: list[tuple[str, str]] = []
    hard = limits.memory_max_mb or limits.memory_mb
    if hard > 0:
        memory.append(("memory.limit_in_bytes", str(hard * MIB)))
    if limits.memory_max_mb and limits.memory_mb:
        memory.append(("memory.soft_limit_in_bytes", str(limits.memory_mb * MIB)))
    cpu: list[tuple[str, str]] = []
    if limits.cpu_mhz > 0:
        cpu.append(("cpu.shares", str(max(MIN_CPU_SHARES, limits.cpu_mhz))))
    cpus = ",".join(str(core) for core in sorted(limits.cores))
    return LimitFiles(tuple(memory), tuple(cpu), cpus)


def missing_controllers(root: Path = ROOT) -> list[str]:
    """The required v1 controllers this host does not mount (empty when exec can work)."""
    return [name for name in REQUIRED if not (root / name / "cgroup.procs").exists()]


@dataclass(frozen=True)
class TaskCgroups:
    """The groups of one task, named `<parent>/<alloc id>.<task>` in every hierarchy."""

    name: str
    root: Path = ROOT

    @classmethod
    def of(cls, parent: str, alloc_id: str, task: str, root: Path = ROOT) -> TaskCgroups:
        return cls(f"{parent.strip('/')}/{alloc_id}.{task}", root)

    def v1(self, controller: str) -> Path:
        return self.root / controller / self.name

    @property
    def unified(self) -> Path:
        return self.root / "unified" / self.name

    def directories(self) -> list[Path]:
        """Every group directory this host can hold (controllers mounted under several names,
        like cpu and cpuacct, resolve to one directory)."""
        found: list[Path] = []
        for controller in CONTROLLERS:
            if (self.root / controller / "cgroup.procs").exists():
                path = self.v1(controller)
                if path.resolve() not in {p.resolve() for p in found}:
                    found.append(path)
        if (self.root / "unified" / "cgroup.procs").exists():
            found.append(self.unified)
        return found

    def create(self, limits: Limits) -> list[Path]:
        """Make the groups and write the limits; returns the `cgroup.procs` files the task's
        first process is written into. OSError when the host refuses."""
        files = limit_files(limits)
        for directory in self.directories():
            _make(directory)
        memory, cpu = self.v1("memory"), self.v1("cpu")
        for name, value in files.memory:
            (memory / name).write_text(value)
        for name, value in files.cpu:
            (cpu / name).write_text(value)
        cpuset = self.v1("cpuset")
        if cpuset.exists():
            self._fill_cpuset(cpuset, files.cpuset_cpus)
        return [directory / "cgroup.procs" for directory in self.directories()]

    def _fill_cpuset(self, group: Path, cpus: str) -> None:
        """A new v1 cpuset group has no cpus nor mems, and takes no process until both are set:
        they come from the parent (each level down from the root), cpus from the task's cores."""
        top = self.root / "cpuset"
        level = top
        for part in group.relative_to(top).parts:
            parent, level = level, level / part
            for name in ("cpuset.mems", "cpuset.cpus"):
                if not (level / name).read_text().strip():
                    (level / name).write_text((parent / name).read_text().strip())
        if cpus:
            (group / "cpuset.cpus").write_text(cpus)

    def procs(self) -> list[int]:
        """Every process of the task (from the cgroup2 group, else the freezer group)."""
        for directory in (self.unified, self.v1("freezer")):
            with contextlib.suppress(OSError, ValueError):
                return [int(line) for line in (directory / "cgroup.procs").read_text().split()]
        return []

    def kill(self) -> None:
        """SIGKILL to every process of the task, forks included: cgroup2's cgroup.kill, else
        freeze, kill each, thaw (so none can fork while the list is read)."""
        with contextlib.suppress(OSError):
            (self.unified / "cgroup.kill").write_text("1")
            return
        freezer = self.v1("freezer") / "freezer.state"
        with contextlib.suppress(OSError):
            freezer.write_text("FROZEN")
        for pid in self.procs():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)
        with contextlib.suppress(OSError):
            freezer.write_text("THAWED")

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer ended a process of the task: memory.oom_control's
        oom_kill count (memory.failcnt stays 0 when a swap limit is also set)."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.v1("memory") / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
        return False

    def remove(self, attempts: int = 20) -> None:
        """Remove the groups once their processes have gone (the kernel may lag a moment
        behind the last exit); a group still busy after that is left for the next try."""
        for directory in self.directories():
            for _ in range(attempts):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as err:
                    if err.errno != errno.EBUSY:
                        break
                    time.sleep(0.05)


def _make(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
