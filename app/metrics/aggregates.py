"""What go-metrics keeps of each timer and counter (its AggregateSample) and Prometheus does not:
the smallest and largest observation and the sum of squares (for the standard deviation), so
/v1/metrics can report Nomad's Min, Max and Stddev. Each role keeps them for its own process,
cumulative like its Prometheus figures, and publishes them with those (app/store/published_timings).

Beside the cumulative figures, each process keeps them per go-metrics interval (InmemSink's 10 s,
aligned to the wall clock, the last RETAINED completed ones: Nomad keeps one minute), which is
what Nomad's /v1/metrics JSON reports (app/metrics/intervals.py).

A counter's observations are its increments of one, as Nomad counts them (IncrCounter(key, 1)
per rejected node): Min and Max 1, Stddev 0."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.metrics.intervals import INTERVAL_S, RETAINED, interval_start

LabelKey = tuple[str, ...]  # sorted key=value, as published_timings keys its rows


@dataclass(frozen=True)
class Aggregate:
    count: float
    total: float
    sum_squares: float
    minimum: float
    maximum: float

    @staticmethod
    def of(value: float, times: float = 1.0) -> Aggregate:
        return Aggregate(times, value * times, value * value * times, value, value)

    def combined(self, other: Aggregate) -> Aggregate:
        return Aggregate(
            self.count + other.count,
            self.total + other.total,
            self.sum_squares + other.sum_squares,
            min(self.minimum, other.minimum),
            max(self.maximum, other.maximum),
        )

    def stddev(self) -> float:
        """go-metrics' sample standard deviation: sqrt((n*sum(x^2) - sum(x)^2) / (n*(n-1))), 0 below two."""
        divisor = self.count * (self.count - 1)
        if divisor <= 0:
            return 0.0
        return math.sqrt(max(self.count * self.sum_squares - self.total**2, 0.0) / divisor)


@dataclass(frozen=True)
class Interval:
    """One go-metrics interval of a process: its start (epoch seconds) and the aggregate of each
    key observed in it. Written only while it is the process's current interval."""

    start: float
    figures: dict[tuple[str, LabelKey], Aggregate]


def label_key(labels: Mapping[str, str]) -> LabelKey:
    return tuple(sorted(f"{k}={v}" for k, v in labels.items() if k != "le"))


class Aggregates:
    """The process's aggregates per (Prometheus name, labels), cumulative and per interval; one
    lock, taken once per observation, around a few dictionary updates."""

    def __init__(
        self, clock: Callable[[], float] = time.time, interval_s: float = INTERVAL_S, retained: int = RETAINED
    ) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, LabelKey], Aggregate] = {}
        self._clock, self._interval_s = clock, interval_s
        self._current = Interval(interval_start(clock(), interval_s), {})
        self._completed: deque[Interval] = deque(maxlen=retained)

    def observe(self, name: str, labels: Mapping[str, str], value: float, times: float = 1.0) -> None:
        if times <= 0:
            return
        key = (name, label_key(labels))
        new = Aggregate.of(value, times)
        start = interval_start(self._clock(), self._interval_s)
        with self._lock:
            found = self._by_key.get(key)
            self._by_key[key] = new if found is None else found.combined(new)
            if start > self._current.start:
                self._roll(start)
            figures = self._current.figures
            kept = figures.get(key)
            figures[key] = new if kept is None else kept.combined(new)

    def _roll(self, start: float) -> None:
        """Close the current interval (kept only if something was observed in it: go-metrics
        reports no key for an interval without observations) and open the one at `start`."""
        if self._current.figures:
            self._completed.append(self._current)
        self._current = Interval(start, {})

    def snapshot(self) -> dict[tuple[str, LabelKey], Aggregate]:
        with self._lock:
            return dict(self._by_key)

    def completed(self) -> list[Interval]:
        """The retained intervals that have ended by now, oldest first (a closed interval's
        figures are never written again, so they are shared, not copied)."""
        start = interval_start(self._clock(), self._interval_s)
        with self._lock:
            if start > self._current.start:
                self._roll(start)
            return list(self._completed)


AGGREGATES = Aggregates()


@dataclass(frozen=True)
class Extra:
    """What /v1/metrics adds to a sample's Count and Sum: the aggregate of every process that
    published one (None if a process of an older release did not), and the Sum per second
    each process accumulated since it started, added up (go-metrics' Rate)."""

    aggregate: Aggregate | None
    rate: float | None
