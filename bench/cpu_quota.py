"""Each worker process as if on a small host of its own: a cgroup (v1 `cpu` controller) per
process with a CFS quota of a fraction of a core. Root only; the benchmark says so and stops
when the controller is not writable."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


@dataclass(frozen=True)
class Throttling:
    periods: int  # CFS periods in which the group ran
    throttled: int  # of them, periods in which it used up its quota
    throttled_s: float

    @property
    def share(self) -> float:
        """The share of periods in which the quota stopped the process: near 1, the quota binds."""
        return self.throttled / self.periods if self.periods else 0.0

    def since(self, before: Throttling) -> Throttling:
        return Throttling(
            self.periods - before.periods, self.throttled - before.throttled, self.throttled_s - before.throttled_s
        )


class CpuQuotas:
    """A parent group for the run and one child group per process added to it."""

    def __init__(self, cores: float, root: Path = CPU_ROOT) -> None:
        if cores <= 0:
            raise ValueError("--worker-cpu must be a positive number of cores")
        if not (root / "cpu.cfs_quota_us").exists() or not os.access(root, os.W_OK):
            raise PermissionError(f"{root} is not a writable cgroup v1 cpu controller (run as root on cgroup v1)")
        self.cores = cores
        self.parent = root / f"corral-bench-{os.getpid()}"
        self.parent.mkdir(exist_ok=True)
        self._groups: dict[int, Path] = {}

    def add(self, pid: int) -> None:
        """Put process `pid` (all its threads) in a group of its own limited to `cores`."""
        group = self.parent / f"p{pid}"
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(int(self.cores * PERIOD_US)))
        (group / "cgroup.procs").write_text(str(pid))
        self._groups[pid] = group

    def throttling(self, pid: int) -> Throttling:
        stat = dict(line.split() for line in (self._groups[pid] / "cpu.stat").read_text().splitlines())
        return Throttling(int(stat["nr_periods"]), int(stat["nr_throttled"]), int(stat["throttled_time"]) / 1e9)

    def close(self) -> None:
        """Remove the groups once their processes have exited (a group with a process in it
        cannot be removed: wait briefly, then move any straggler back to the root)."""
        for group in [*self._groups.values(), self.parent]:
            for _ in range(50):
                with contextlib.suppress(OSError):
                    group.rmdir()
                    break
                for pid in (group / "cgroup.procs").read_text().split() if group.exists() else []:
                    with contextlib.suppress(OSError):
                        (CPU_ROOT / "cgroup.procs").write_text(pid)
                time.sleep(0.1)
        self._groups.clear()

    def __enter__(self) -> CpuQuotas:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
