"""Client-side garbage collection (seed 000): terminal allocations are destroyed oldest-finished
first while disk usage, inode usage or the number of tracked allocations is over its limit,
or, when forced (`system gc`), all of them. Nothing is destroyed just for being finished."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from client.allocs.alloc_runner import AllocRunner
from client.allocs.destroyer import Destroyer, finished
from client.config import GcConfig

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


def over_count(config: GcConfig, tracked: int) -> str | None:
    return f"{tracked} allocations tracked, limit {config.max_allocs}" if tracked > config.max_allocs else None


def pressure(config: GcConfig, tracked: int, usage: Callable[[], Usage]) -> str | None:
    """Why one more allocation must go, checked in Nomad's order; None when every limit holds.
    The count is checked first only because it needs no system call; any reason deletes the same one."""
    if reason := over_count(config, tracked):
        return reason
    current = usage()
    if current.disk_percent > config.disk_usage_threshold:
        return f"disk usage {current.disk_percent:.0f}% over {config.disk_usage_threshold:g}%"
    if current.inode_percent > config.inode_usage_threshold:
        return f"inode usage {current.inode_percent:.0f}% over {config.inode_usage_threshold:g}%"
    return None


class GarbageCollector:
    """Decides what to destroy; the destroys themselves run on `parallel_destroys` slots.

    A run first queues what the allocation count (or a forced run) calls for, without waiting.
    Then it measures disk and inodes, destroying one allocation at a time and re-measuring once
    that destroy is done. It waits for its own destroys at most one GC interval: a hung one
    then ends the run instead of stalling GC, and no run waits while holding the lock, so
    other runs carry on meanwhile. Allocations whose destroy is queued or running are neither
    counted nor queued again (a hung one keeps its slot, nothing more)."""

    def __init__(
        self,
        config: GcConfig,
        runners: Callable[[], list[AllocRunner]],
        destroy: Callable[[AllocRunner], None],
        usage: Callable[[], Usage],
    ) -> None:
        self.config, self._runners, self._usage = config, runners, usage
        self.destroyer = Destroyer(config.parallel_destroys, destroy)
        self._lock = threading.Lock()
        self._measuring = threading.Lock()  # one run at a time measures usage and waits on it
        self.wake = threading.Event()

    def collect(self, *, forced: bool = False, incoming: int = 0) -> list[str]:
        """One GC run; `incoming` counts placements about to be added. Returns the ids it queued
        for destruction, in order; a destroy may still be running when it returns."""
        with self._lock:
            queued, mine = self._by_count(forced, incoming)
        if forced or not self._measuring.acquire(blocking=False):
            return queued  # forced runs destroy everything anyway; or another run is measuring
        try:
            while finished(mine, self.config.interval_s):
                with self._lock:
                    victim, reason = self._by_usage(incoming, set(queued))
                    done = self.destroyer.submit(victim, reason) if victim and reason else None
                if victim is None or done is None:
                    return queued
                queued.append(victim.id)
                mine = [done]
            log.warning("allocation destroys still running after a GC interval; the next run re-checks usage")
            return queued
        finally:
            self._measuring.release()

    def destroy(self, runner: AllocRunner, reason: str) -> None:
        """Destroy one allocation on a destroy slot (unless it is on its way already)."""
        self.destroyer.submit(runner, reason)

    def _candidates(self, incoming: int, tried: set[str]) -> tuple[list[AllocRunner], int]:
        """Terminal allocations not already on their way, oldest-finished first, and the count
        tracked. Those this run queued already are left out too: one whose destroy failed waits
        for the next run rather than being retried in a loop."""
        skip = self.destroyer.pending() | tried
        runners = [r for r in self._runners() if r.id not in skip]
        queue = sorted((r for r in runners if r.terminal), key=lambda r: (r.finished_at or 0.0, r.id))
        return queue, len(runners) + incoming

    def _by_count(self, forced: bool, incoming: int) -> tuple[list[str], list[threading.Event]]:
        queue, tracked = self._candidates(incoming, set())
        queued: list[str] = []
        mine: list[threading.Event] = []
        for victim in queue:
            reason = "forced garbage collection" if forced else over_count(self.config, tracked)
            if reason is None:
                break
            done = self.destroyer.submit(victim, reason)
            if done is not None:
                queued.append(victim.id)
                mine.append(done)
            tracked -= 1
        return queued, mine

    def _by_usage(self, incoming: int, tried: set[str]) -> tuple[AllocRunner | None, str | None]:
        queue, tracked = self._candidates(incoming, tried)
        if not queue:
            return None, None
        return queue[0], pressure(self.config, tracked, self._usage)
