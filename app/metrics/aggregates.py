"""What go-metrics keeps of each timer and counter (its AggregateSample) and Prometheus does not:
the smallest and largest observation and the sum of squares (for the standard deviation), so
/v1/metrics can report Nomad's Min, Max and Stddev. Each role keeps them for its own process,
cumulative like its Prometheus figures, and publishes them with those (app/store/published_timings).

A counter's observations are its increments of one, as Nomad counts them (IncrCounter(key, 1)
per rejected node): Min and Max 1, Stddev 0."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

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


def label_key(labels: Mapping[str, str]) -> LabelKey:
    return tuple(sorted(f"{k}={v}" for k, v in labels.items() if k != "le"))


class Aggregates:
    """The process's aggregates per (Prometheus name, labels); cheap and thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, LabelKey], Aggregate] = {}

    def observe(self, name: str, labels: Mapping[str, str], value: float, times: float = 1.0) -> None:
        if times <= 0:
            return
        key = (name, label_key(labels))
        new = Aggregate.of(value, times)
        with self._lock:
            found = self._by_key.get(key)
            self._by_key[key] = new if found is None else found.combined(new)

    def snapshot(self) -> dict[tuple[str, LabelKey], Aggregate]:
        with self._lock:
            return dict(self._by_key)


AGGREGATES = Aggregates()


@dataclass(frozen=True)
class Extra:
    """What /v1/metrics adds to a sample's Count and Sum: the aggregate of every process that
    published one (None if a process of an older release did not), and the Sum per second
    each process accumulated since it started, added up (go-metrics' Rate)."""

    aggregate: Aggregate | None
    rate: float | None
