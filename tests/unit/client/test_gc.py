"""Client-side GC decisions (seed 000): oldest-finished first, only under pressure unless forced,
re-checking after every destroy; destroys run on `parallel_destroys` slots, a failed one is
logged, and a hung one holds only its own slot."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from client.allocs import destroyer
from client.allocs.gc import GarbageCollector, Usage
from client.config import GcConfig

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

    def collector(self, **config: Any) -> GarbageCollector:
        # FakeRunner stands in for AllocRunner (the collector reads only what it defines): not a subclass.
        runners = lambda: list(self.runners.values())  # noqa: E731
        return GarbageCollector(GcConfig(**config), runners, self.destroy, self.usage)  # type: ignore[arg-type]

    def collect(self, *, forced: bool = False, incoming: int = 0, **config: Any) -> list[str]:
        """One run of a fresh collector, and its destroys finished."""
        gc = self.collector(**config)
        queued = gc.collect(forced=forced, incoming=incoming)
        assert gc.destroyer.wait(timeout=30)
        return queued


def runners(finished: int, running: int = 0) -> list[FakeRunner]:
    done = [FakeRunner(f"done-{i:02}", float(100 - i)) for i in range(finished)]  # done-59 finished first
    return done + [FakeRunner(f"live-{i}", None) for i in range(running)]


def test_over_max_allocs_destroys_the_oldest_finished_until_at_the_limit() -> None:
    node = Node(runners(60))
    destroyed = node.collect(max_allocs=50)
    assert destroyed == [f"done-{i:02}" for i in range(59, 49, -1)]
    assert len(node.runners) == 50


def test_nothing_is_destroyed_without_pressure() -> None:
    node = Node(runners(10, running=5))
    assert node.collect(max_allocs=50) == []


def test_running_allocations_are_never_destroyed() -> None:
    node = Node(runners(2, running=10))
    assert node.collect(max_allocs=5) == ["done-01", "done-00"]
    assert sorted(node.runners) == [f"live-{i}" for i in range(10)]


def test_a_placement_makes_room_for_itself() -> None:
    node = Node(runners(50))
    assert node.collect(incoming=1, max_allocs=50) == ["done-49"]


def test_disk_pressure_is_rechecked_after_each_destroy() -> None:
    node = Node(runners(5), disk=[95.0, 90.0, 85.0, 70.0])
    assert node.collect(disk_usage_threshold=80) == ["done-04", "done-03", "done-02"]


def test_forced_collection_destroys_every_terminal_allocation() -> None:
    node = Node(runners(3, running=2))
    assert node.collect(forced=True) == ["done-02", "done-01", "done-00"]
    assert sorted(node.runners) == ["live-0", "live-1"]


class Recorder:
    """Stands in for the module's structlog logger: keeps (level, event, fields)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, object]]] = []

    def __getattr__(self, level: str) -> Callable[..., None]:
        return lambda event, **fields: self.lines.append((level, event, fields))


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(destroyer, "log", recorder)
    return recorder


class TroubledNode(Node):
    """Destroys of the ids in `failing` raise; those in `hanging` block until `release` is set."""

    def __init__(self, runners: list[FakeRunner], disk: list[float] | None = None) -> None:
        super().__init__(runners, disk)
        self.failing: set[str] = set()
        self.hanging: set[str] = set()
        self.release = threading.Event()
        self.calls: list[str] = []
        self.changed = threading.Condition(self.lock)
        self.in_flight = self.most_in_flight = 0

    def destroy(self, runner: FakeRunner) -> None:
        with self.changed:
            self.calls.append(runner.id)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.changed.notify_all()
        try:
            if runner.id in self.failing:
                raise OSError(f"cannot remove {runner.id}: device busy")
            if runner.id in self.hanging:
                self.release.wait()
            super().destroy(runner)
        finally:
            with self.changed:
                self.in_flight -= 1
                self.changed.notify_all()

    def wait_until(self, predicate: Callable[[], bool]) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=30)


@pytest.fixture
def troubled() -> Iterator[Callable[..., TroubledNode]]:
    nodes: list[TroubledNode] = []

    def make(finished: int, disk: list[float] | None = None) -> TroubledNode:
        nodes.append(TroubledNode(runners(finished), disk))
        return nodes[-1]

    yield make
    for node in nodes:
        node.release.set()  # let hung destroys finish so no thread outlives the test


def test_a_failed_destroy_is_logged_with_the_alloc_id_and_error_and_retried_by_a_later_run(
    troubled: Callable[..., TroubledNode], logged: Recorder
) -> None:
    node = troubled(52)
    node.failing = {"done-51"}
    gc = node.collector(max_allocs=50)
    assert gc.collect() == ["done-51", "done-50"]
    assert gc.destroyer.wait(timeout=30)
    failures = [fields for level, event, fields in logged.lines if level == "error"]
    assert [(f["alloc_id"], f["reason"]) for f in failures] == [("done-51", "52 allocations tracked, limit 50")]
    assert "cannot remove done-51: device busy" in str(failures[0]["error"])
    assert "done-51" in node.runners  # still here: the next run tries again
    node.failing.clear()
    assert gc.collect() == ["done-51"]
    assert gc.destroyer.wait(timeout=30)
    assert "done-51" not in node.runners


def test_at_most_parallel_destroys_run_at_once(troubled: Callable[..., TroubledNode]) -> None:
    node = troubled(56)
    node.hanging = {f"done-{i:02}" for i in range(56)}
    gc = node.collector(max_allocs=50, parallel_destroys=2, interval_s=0.01)
    assert len(gc.collect()) == 6
    node.wait_until(lambda: node.in_flight == 2)
    assert not gc.destroyer.wait(timeout=0.05)  # the other four wait for a slot
    assert node.in_flight == 2
    node.release.set()
    assert gc.destroyer.wait(timeout=30)
    assert node.most_in_flight == 2
    assert len(node.runners) == 50


def test_a_hung_destroy_keeps_only_its_slot_and_is_not_queued_again(troubled: Callable[..., TroubledNode]) -> None:
    node = troubled(55)
    node.hanging = {"done-54"}  # the oldest: the first one destroyed
    # A short interval: the run waits that long for its own destroys before it leaves the rest.
    gc = node.collector(max_allocs=50, parallel_destroys=2, interval_s=0.01)
    assert gc.collect() == ["done-54", "done-53", "done-52", "done-51", "done-50"]
    node.wait_until(lambda: len(node.runners) == 51)  # the other slot did the other four
    assert sorted(gc.destroyer.pending()) == ["done-54"]
    assert gc.collect() == []  # 50 left besides the hung one: not queued again
    node.runners.update({r.id: r for r in [FakeRunner("late-0", 1.0), FakeRunner("late-1", 2.0)]})
    assert gc.collect() == ["late-0", "late-1"]
    node.wait_until(lambda: "late-1" not in node.runners)
    assert node.calls.count("done-54") == 1
    assert node.in_flight == 1


def test_disk_pressure_run_gives_up_on_a_hung_destroy_and_the_next_run_carries_on(
    troubled: Callable[..., TroubledNode], logged: Recorder
) -> None:
    node = troubled(5, disk=[95.0, 90.0, 70.0])
    node.hanging = {"done-04"}
    gc = node.collector(disk_usage_threshold=80, parallel_destroys=2, interval_s=0.01)
    assert gc.collect() == ["done-04"]  # waited one interval for it, then left it to the next run
    assert gc.destroyer.pending() == {"done-04"}
    gc.config = replace(gc.config, interval_s=60)
    assert gc.collect() == ["done-03", "done-02"]  # disk re-checked after each; the hung one skipped
    assert sorted(node.runners) == ["done-00", "done-01", "done-04"]
    assert node.calls.count("done-04") == 1
