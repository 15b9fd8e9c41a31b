"""The garbage collector's pauses in the fleet's process.

A fleet of thousands of nodes is one Python heap of millions of objects. A full collection of it
stops every thread (the heartbeat lane's too) at once, which no fleet of real hosts does: each
has its own runtime. Counting the pauses lets a benchmark tell them from the servers' delays.

Measured at 10,000 nodes (bench.fleet): 2 full collections in a 90 s window, the longest 3.6 s,
which made about 4 % of the window's heartbeats late. So once every node has registered, the
fleet freezes its heap (`settle`): what is alive then (the nodes, their clients and loops) moves
to the collector's permanent generation, and later full collections walk only what came after.

That was not enough for a placement storm: each node's watch answers and status reports made a
new heap of millions of objects, and its full collections paused the fleet for up to 11.3 s
(221 s of pauses in one run). So after settling, the fleet also stops automatic full
collections and runs one only every FULL_EVERY_S (`collect_when_due`), as the API's workers do
(workers/collector.py) but rarer: cyclic garbage that outlives the young generations waits for
it. `remove` puts the collector back as it found it, for fleets run inside another process."""

from __future__ import annotations

import gc
import time

FULL_EVERY_S = 1800.0
NEVER = 2**31 - 1  # a threshold the oldest generation's counter never reaches


class GcPauses:
    """Collections and their pauses, fed by `gc.callbacks` while installed."""

    def __init__(self) -> None:
        self.collections = 0
        self.full = 0  # of the oldest generation
        self.total_s = 0.0
        self.longest_s = 0.0
        self.settled = False
        self._began: float | None = None
        self._thresholds: tuple[int, int, int] | None = None  # the collector's, before settling
        self._last_full = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        if self._began is None:
            return
        pause, self._began = time.perf_counter() - self._began, None
        self.collections += 1
        if info.get("generation") == 2:
            self.full += 1
        self.total_s += pause
        self.longest_s = max(self.longest_s, pause)

    def settle(self) -> None:
        """Freeze the heap as it is now (once): its objects are never walked again; from now on a
        full collection runs only when `collect_when_due` finds one due."""
        if self.settled:
            return
        self.settled = True
        gc.freeze()
        self._thresholds = gc.get_threshold()
        young, middle, _ = self._thresholds
        gc.set_threshold(young, middle, NEVER)
        self._last_full = time.monotonic()

    def collect_when_due(self, every_s: float = FULL_EVERY_S) -> bool:
        """Once settled, a full collection every `every_s`; whether one ran now."""
        if not self.settled or time.monotonic() - self._last_full < every_s:
            return False
        self._last_full = time.monotonic()
        gc.collect()
        return True

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            gc.unfreeze()
            self._thresholds = None

    def snapshot(self) -> dict[str, float | int | bool]:
        return {
            "gc_collections": self.collections,
            "gc_full": self.full,
            "gc_pause_total_s": round(self.total_s, 4),
            "gc_pause_longest_s": round(self.longest_s, 4),
            "gc_settled": self.settled,
        }
