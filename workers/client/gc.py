"""Client-side garbage collection (seed 000): terminal allocations are destroyed oldest-finished
first while disk usage, inode usage or the number of tracked allocations is over its limit,
or, when forced (`system gc`), all of them. Nothing is destroyed just for being finished."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import structlog

from workers.client.alloc_runner import AllocRunner
from workers.client.config import GcConfig

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Usage:
    disk_percent: float
    inode_percent: float


def measure(path: Path) -> Usage:
    stats = os.statvfs(path)
    disk = 100.0 * (1 - stats.f_bavail / stats.f_blocks) if stats.f_blocks else 0.0
    inodes = 100.0 * (1 - stats.f_favail / stats.f_files) if stats.f_files else 0.0
    return Usage(disk, inodes)


def pressure(config: GcConfig, tracked: int, usage: Callable[[], Usage]) -> str | None:
    """Why one more allocation must go, checked in Nomad's order; None when every limit holds.
    The count is checked first only because it needs no system call; any reason deletes the same one."""
    if tracked > config.max_allocs:
        return f"{tracked} allocations tracked, limit {config.max_allocs}"
    current = usage()
    if current.disk_percent > config.disk_usage_threshold:
        return f"disk usage {current.disk_percent:.0f}% over {config.disk_usage_threshold:g}%"
    if current.inode_percent > config.inode_usage_threshold:
        return f"inode usage {current.inode_percent:.0f}% over {config.inode_usage_threshold:g}%"
    return None


class GarbageCollector:
    def __init__(
        self,
        config: GcConfig,
        runners: Callable[[], list[AllocRunner]],
        destroy: Callable[[AllocRunner], None],
        usage: Callable[[], Usage],
    ) -> None:
        self.config, self._runners, self._destroy, self._usage = config, runners, destroy, usage
        self._lock = threading.Lock()
        self.wake = threading.Event()

    def collect(self, *, forced: bool = False, incoming: int = 0) -> list[str]:
        """One GC run; `incoming` counts placements about to be added. Returns the destroyed ids, in order."""
        with self._lock:
            runners = self._runners()
            queue = sorted((r for r in runners if r.terminal), key=lambda r: (r.finished_at or 0.0, r.id))
            tracked = len(runners) + incoming
            destroyed: list[str] = []
            pending: list[Future[None]] = []
            with ThreadPoolExecutor(self.config.parallel_destroys, thread_name_prefix="gc") as pool:
                for victim in queue:
                    reason = "forced garbage collection" if forced else self._reason(tracked, pending)
                    if reason is None:
                        break
                    log.info("destroying allocation", alloc_id=victim.id, reason=reason)
                    pending.append(pool.submit(self._destroy, victim))
                    destroyed.append(victim.id)
                    tracked -= 1
            return destroyed

    def _reason(self, tracked: int, pending: list[Future[None]]) -> str | None:
        if tracked <= self.config.max_allocs:
            wait(pending)  # disk and inodes are measured only once the destroys under way are done
        return pressure(self.config, tracked, self._usage)
