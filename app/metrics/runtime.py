"""Nomad's `nomad.runtime.*` gauges (Go's runtime statistics) with the Python process's
equivalents, reported by every process that serves /v1/metrics, with Nomad's `host` label:

| Nomad's gauge | here |
|---|---|
| num_goroutines | live threads (under gevent, the patched threads: greenlets that run requests) |
| alloc_bytes | resident set size (bytes) |
| sys_bytes | virtual memory size (bytes) |
| heap_objects | memory blocks the interpreter has allocated (sys.getallocatedblocks) |
| total_gc_runs | garbage collections, all generations |
| total_gc_pause_ns | time spent in those collections (ns), measured by a gc callback |

Go's malloc_count and free_count have no Python counterpart and are not reported."""

from __future__ import annotations

import gc
import socket
import sys
import threading
import time
from collections.abc import Iterator

import psutil
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from app.metrics.timings import prometheus_name

HELP = {
    "num_goroutines": "Live threads of this process (Go: goroutines).",
    "alloc_bytes": "Resident memory of this process (bytes).",
    "sys_bytes": "Virtual memory of this process (bytes).",
    "heap_objects": "Memory blocks the interpreter has allocated.",
    "total_gc_runs": "Garbage collections so far, all generations.",
    "total_gc_pause_ns": "Time spent collecting garbage so far (ns).",
}


class _GcClock:
    """Sums the time between each collection's start and stop callbacks."""

    def __init__(self) -> None:
        self.total_ns = 0
        self._began = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter_ns()
        elif self._began:
            self.total_ns += time.perf_counter_ns() - self._began
            self._began = 0


GC_CLOCK = _GcClock()


class RuntimeCollector(Collector):
    def __init__(self) -> None:
        self._process = psutil.Process()
        self._host = socket.gethostname()

    def figures(self) -> dict[str, float]:
        memory = self._process.memory_info()
        return {
            "num_goroutines": threading.active_count(),
            "alloc_bytes": memory.rss,
            "sys_bytes": memory.vms,
            "heap_objects": sys.getallocatedblocks(),
            "total_gc_runs": sum(stats["collections"] for stats in gc.get_stats()),
            "total_gc_pause_ns": GC_CLOCK.total_ns,
        }

    def collect(self) -> Iterator[Metric]:
        for key, value in self.figures().items():
            family = GaugeMetricFamily(prometheus_name(f"nomad.runtime.{key}"), HELP[key], labels=["host"])
            family.add_metric([self._host], value)
            yield family


_installed = threading.Lock()
_done: list[RuntimeCollector] = []


def install() -> None:
    """Register the runtime gauges in the default registry, once per process."""
    with _installed:
        if _done:
            return
        collector = RuntimeCollector()
        REGISTRY.register(collector)
        gc.callbacks.append(GC_CLOCK)
        _done.append(collector)
