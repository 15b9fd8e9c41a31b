"""What the simulated fleet counts, how it names a failure, and the stats file it keeps.

A fleet of thousands failing together must not write thousands of lines: each failure is
counted under its kind (loop and error), and only the first of each kind is logged."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from client.fleet.pauses import GcPauses
from client.fleet.retry import NodeGone, Retryable

ON_TIME_S = 1.0  # a heartbeat accepted within this long of falling due is on time
SUMMARY_EVERY_S = 30.0
STATS_FILE_EVERY_S = 2.0  # with a stats file, its reader wants fresh figures


@dataclass
class FleetStats:
    registered: int = 0
    heartbeats: int = 0
    on_time: int = 0
    late: int = 0
    # Late beats whose send waited longer than their round trip: the fleet's own lateness (its
    # loop or this machine's CPU), not the servers'.
    late_sent: int = 0
    failures: int = 0
    latencies_s: list[float] = field(default_factory=list)  # sent to answered
    send_delays_s: list[float] = field(default_factory=list)  # fell due to sent
    watches: int = 0
    started: int = 0  # allocations this fleet reported running (or failed at start)
    errors: Counter[str] = field(default_factory=Counter)
    gc: GcPauses = field(default_factory=GcPauses)

    def snapshot(self) -> dict[str, Any]:
        return {
            "heartbeat_p50_s": recent_quantile(self.latencies_s, 0.50),
            "heartbeat_p99_s": recent_quantile(self.latencies_s, 0.99),
            "heartbeat_send_delay_p99_s": recent_quantile(self.send_delays_s, 0.99),
            "registered": self.registered,
            "heartbeats": self.heartbeats,
            "on_time": self.on_time,
            "late": self.late,
            "late_sent": self.late_sent,
            "failures": self.failures,
            "watches": self.watches,
            "started": self.started,
            "errors": dict(self.errors),
            **self.gc.snapshot(),
        }


def recent_quantile(samples: list[float], q: float) -> float | None:
    """The q-quantile of the last 5,000 samples, in seconds (None before the first)."""
    recent = sorted(samples[-5000:])
    return round(recent[min(len(recent) - 1, int(len(recent) * q))], 4) if recent else None


def failure_kind(loop: str, err: BaseException) -> str:
    """The name a failure is counted under: its loop and its HTTP status or exception type."""
    if isinstance(err, Retryable):
        return f"{loop}:HTTP {err.status}"
    if isinstance(err, httpx.HTTPStatusError):
        return f"{loop}:HTTP {err.response.status_code}"
    return f"{loop}:{type(err).__name__}"


def expected_failure(err: BaseException) -> bool:
    """A failure of the servers or the network, which the fleet waits out (anything else is a
    fault of the fleet's own, logged with its traceback)."""
    return isinstance(err, httpx.HTTPError | Retryable | NodeGone)


def write_stats_file(path: Path, snapshot: dict[str, Any]) -> None:
    """Replace `path` with `snapshot` as JSON, whole: a reader never sees half a file."""
    path.with_suffix(".tmp").write_text(json.dumps(snapshot))
    path.with_suffix(".tmp").replace(path)
