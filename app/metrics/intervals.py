"""go-metrics' interval arithmetic, as Nomad's agent configures its InmemSink (10 s intervals,
one minute retained) and as its /v1/metrics (DisplayMetrics) reads it.

Intervals are aligned to the wall clock (`time.Now().Truncate(interval)`) and named by their
start. The summary reports the last *completed* interval: its Timestamp is that start, a key
with no observation in it is absent, and a sample's Rate is its Sum per second of the interval
(Sum / 10). Here the figures of the roles' processes reach the API through the database, so the
reported interval is the last one that ended at least SETTLE_S ago: each process publishes an
interval within that time of its end (workers/timings_publisher.py)."""

from __future__ import annotations

import math

INTERVAL_S = 10.0  # Nomad: inm := metrics.NewInmemSink(10*time.Second, time.Minute)
RETAINED = 6  # intervals a process keeps (one minute)
SETTLE_S = 2.0  # time after an interval's end its figures are expected in the database


def interval_start(now: float, interval_s: float = INTERVAL_S) -> float:
    """The start of the interval that `now` (epoch seconds) falls in."""
    return math.floor(now / interval_s) * interval_s


def reported_start(now: float, interval_s: float = INTERVAL_S, settle_s: float = SETTLE_S) -> float:
    """The start of the interval /v1/metrics reports at `now`: the last that ended by now - settle_s."""
    return interval_start(now - settle_s, interval_s) - interval_s


def rate(total: float, interval_s: float = INTERVAL_S) -> float:
    """go-metrics' Rate: the interval's Sum per second."""
    return total / interval_s
