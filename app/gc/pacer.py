"""Pacing: a long GC steps back when its batches suddenly slow down, so it never monopolises a
busy database. Pure apart from the injectable sleep."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable

# A batch that takes more than SLOW_FACTOR times the median time per row of the recent
# batches of its kind (at least PACE_MIN_SAMPLES of them, the last PACE_WINDOW) ran into
# contention; the collector then pauses for a share of that batch's time.
SLOW_FACTOR = 2.0
PACE_WINDOW = 32
PACE_MIN_SAMPLES = 8


class Pacer:
    """Keeps a long GC from monopolising a busy database. GC runs flat out while its batches
    take their usual time; a batch that suddenly takes much longer per row than the recent
    ones of its kind means something else needs the server (a checkpoint, autovacuum, a burst
    of claims, a busy disk), and GC then pauses for `ratio` times that batch's duration, so
    the others get the server back. Sustained slowness becomes the new normal and is not
    paused for: pacing sheds spikes, it does not halve a slow machine's GC. 0 turns it off."""

    def __init__(self, ratio: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self.ratio = ratio
        self.sleep = sleep
        self._recent: dict[tuple[str, ...], deque[float]] = {}

    def pause_after(self, kind: tuple[str, ...], rows: int, elapsed_s: float) -> float:
        """Record a batch; return how long to pause before the next one."""
        if rows <= 0 or self.ratio <= 0:
            return 0.0
        per_row = elapsed_s / rows
        recent = self._recent.setdefault(kind, deque(maxlen=PACE_WINDOW))
        typical = statistics.median(recent) if len(recent) >= PACE_MIN_SAMPLES else None
        recent.append(per_row)
        if typical is None or per_row <= SLOW_FACTOR * typical:
            return 0.0
        return self.ratio * elapsed_s
