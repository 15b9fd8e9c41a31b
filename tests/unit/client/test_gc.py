"""Client-side GC decisions (seed 000): oldest-finished first, only under pressure unless forced,
re-checking after every destroy."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from workers.client.config import GcConfig
from workers.client.gc import GarbageCollector, Usage

pytestmark = pytest.mark.unit


@dataclass
class FakeRunner:
    id: str
    finished_at: float | None

    @property
    def terminal(self) -> bool:
        return self.finished_at is not None


class Node:
    def __init__(self, runners: list[FakeRunner], disk: list[float] | None = None) -> None:
        self.runners = {r.id: r for r in runners}
        self.disk = disk or []
        self.lock = threading.Lock()

    def destroy(self, runner: FakeRunner) -> None:
        with self.lock:
            del self.runners[runner.id]
            if self.disk:
                self.disk.pop(0)

    def usage(self) -> Usage:
        with self.lock:
            return Usage(self.disk[0] if self.disk else 10.0, 10.0)

    def collector(self, **config: float) -> GarbageCollector:
        return GarbageCollector(GcConfig(**config), lambda: list(self.runners.values()), self.destroy, self.usage)  # type: ignore[arg-type]


def runners(finished: int, running: int = 0) -> list[FakeRunner]:
    done = [FakeRunner(f"done-{i:02}", float(100 - i)) for i in range(finished)]  # done-59 finished first
    return done + [FakeRunner(f"live-{i}", None) for i in range(running)]


def test_over_max_allocs_destroys_the_oldest_finished_until_at_the_limit() -> None:
    node = Node(runners(60))
    destroyed = node.collector(max_allocs=50).collect()
    assert destroyed == [f"done-{i:02}" for i in range(59, 49, -1)]
    assert len(node.runners) == 50


def test_nothing_is_destroyed_without_pressure() -> None:
    node = Node(runners(10, running=5))
    assert node.collector(max_allocs=50).collect() == []


def test_running_allocations_are_never_destroyed() -> None:
    node = Node(runners(2, running=10))
    assert node.collector(max_allocs=5).collect() == ["done-01", "done-00"]
    assert sorted(node.runners) == [f"live-{i}" for i in range(10)]


def test_a_placement_makes_room_for_itself() -> None:
    node = Node(runners(50))
    assert node.collector(max_allocs=50).collect(incoming=1) == ["done-49"]


def test_disk_pressure_is_rechecked_after_each_destroy() -> None:
    node = Node(runners(5), disk=[95.0, 90.0, 85.0, 70.0])
    assert node.collector(disk_usage_threshold=80).collect() == ["done-04", "done-03", "done-02"]


def test_forced_collection_destroys_every_terminal_allocation() -> None:
    node = Node(runners(3, running=2))
    assert node.collector().collect(forced=True) == ["done-02", "done-01", "done-00"]
    assert sorted(node.runners) == ["live-0", "live-1"]
