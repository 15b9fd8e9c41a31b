"""The garbage collector's pauses in the fleet's process.

A fleet of thousands of nodes is one Python heap of millions of objects. A full collection of it
stops every thread (the heartbeat lane's too) at once, which no fleet of real hosts does: each
has its own runtime. Counting the pauses lets a benchmark tell them from the servers' delays.

Measured at 10,000 nodes (bench.fleet): 2 full collections in a 90 s window, the longest 3.6 s,
which made about 4 % of the window's heartbeats late; in a placement storm, up to 11.3 s (221 s
of pauses in one run); and during the ramp, up to 5.7 s as the heap grew node by node.

So while installed the fleet runs no automatic full collection: the young generations keep
theirs (cheap, and what frees most short-lived cycles) and a full one runs only every
FULL_EVERY_S (`collect_when_due`), as the API's workers do (workers/collector.py) but rarer:
cyclic garbage that outlives the young generations waits for it. And as nodes register, the
fleet freezes its heap every FREEZE_EVERY registrations and once they all have (`registered`):
what is alive then (the nodes, their clients and loops) moves to the collector's permanent
generation (an O(1) move), so that a full collection walks only what came after. `remove` puts
the collector back as it found it, for fleets run inside another process."""

from __future__ import annotations

import gc
import time

FULL_EVERY_S = 1800.0
FREEZE_EVERY = 1000  # registrations
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
        self._thresholds: tuple[int, int, int] | None = None  # the collector's, before install
        self._last_full = 0.0
        self._froze = False

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

    def registered(self, count: int, of: int) -> None:
        """The `count`th of `of` nodes has registered: freeze the heap every FREEZE_EVERY and at
        the last (then the fleet is settled)."""
        if count % FREEZE_EVERY == 0 or count >= of:
            gc.freeze()
            self._froze = True
        if count >= of:
            self.settled = True

    def collect_when_due(self, every_s: float = FULL_EVERY_S) -> bool:
        """While installed, a full collection every `every_s`; whether one ran now."""
        if self._thresholds is None or time.monotonic() - self._last_full < every_s:
            return False
        self._last_full = time.monotonic()
        gc.collect()
        return True

    def install(self) -> None:
        """Count the collector's pauses, and stop its automatic full collections."""
        if self not in gc.callbacks:
            gc.callbacks.append(self)
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, NEVER)
            self._last_full = time.monotonic()

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
        if self._froze:
            gc.unfreeze()
            self._froze = False

    def snapshot(self) -> dict[str, float | int | bool]:
        return {
            "gc_collections": self.collections,
            "gc_full": self.full,
            "gc_pause_total_s": round(self.total_s, 4),
            "gc_pause_longest_s": round(self.longest_s, 4),
            "gc_settled": self.settled,
        }
