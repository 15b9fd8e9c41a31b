"""The timings and counters a role records in its own process, under Nomad's metric names.

Nomad measures timers in milliseconds and its Prometheus sink keeps the unit, so dashboards
built for Nomad read these unchanged: `nomad.nomad.plan.apply` is `nomad_nomad_plan_apply`.
Each role serves its own registry (`CORRAL_METRICS_BIND`); the API server adds the cluster's
gauges, which it computes from the database at scrape time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from app.metrics.aggregates import AGGREGATES

# Milliseconds, from a fast plan apply to a slow scheduling pass.
MS_BUCKETS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


# Prometheus name -> Nomad's dotted name, for the JSON view of /v1/metrics.
NOMAD_NAMES: dict[str, str] = {}
_NAMES: dict[int, str] = {}  # id of a timer or counter -> its Prometheus name (for AGGREGATES)
# Prometheus name -> help text of the timers and counters below (app/store/published_timings.py
# rebuilds their families from the figures the roles publish).
HELP: dict[str, str] = {}


def prometheus_name(nomad_name: str) -> str:
    """Nomad's Prometheus sink: dots and dashes become underscores. Remembered for the JSON view."""
    converted = nomad_name.replace(".", "_").replace("-", "_")
    NOMAD_NAMES[converted] = nomad_name
    return converted


def _timer(
    nomad_name: str, help_text: str, labels: tuple[str, ...] = (), registry: CollectorRegistry = REGISTRY
) -> Histogram:
    HELP[prometheus_name(nomad_name)] = help_text
    timer = Histogram(prometheus_name(nomad_name), help_text, labels, buckets=MS_BUCKETS, registry=registry)
    _NAMES[id(timer)] = prometheus_name(nomad_name)
    return timer


# Worker (nomad.nomad.worker.*)
DEQUEUE_EVAL = _timer("nomad.nomad.worker.dequeue_eval", "Time to claim an evaluation from the broker (ms).")
INVOKE_SCHEDULER = _timer(
    "nomad.nomad.worker.invoke_scheduler", "Time of one scheduling pass, by scheduler type (ms).", ("type",)
)
SUBMIT_PLAN = _timer("nomad.nomad.worker.submit_plan", "Time from plan submission to the applier's verdict (ms).")
# Applier (nomad.nomad.plan.*)
PLAN_EVALUATE = _timer("nomad.nomad.plan.evaluate", "Time to check a plan against current state (ms).")
PLAN_APPLY = _timer("nomad.nomad.plan.apply", "Time to check and commit one plan (ms).")
_REJECTED = prometheus_name("nomad.nomad.plan.node_rejected")
HELP[_REJECTED] = "Plan nodes the applier refused because they no longer fit."
PLAN_NODE_REJECTED = Counter(_REJECTED, HELP[_REJECTED])
_NAMES[id(PLAN_NODE_REJECTED)] = _REJECTED
# The counters among them (the others are timers), for the intervals the roles publish.
COUNTERS = frozenset({_REJECTED})
# The families every role publishes for the API servers' /v1/metrics.
PUBLISHED = tuple(HELP)


@contextmanager
def timed(timer: Histogram, **labels: str) -> Iterator[None]:
    """Observe the block's duration in milliseconds, also when it raises."""
    began = time.perf_counter()
    try:
        yield
    finally:
        observe(timer, (time.perf_counter() - began) * 1000, **labels)


def observe(timer: Histogram, value_ms: float, **labels: str) -> None:
    """One observation, in the Prometheus histogram and in the process's aggregates."""
    (timer.labels(**labels) if labels else timer).observe(value_ms)
    AGGREGATES.observe(_NAMES[id(timer)], labels, value_ms)


def count(counter: Counter, amount: int) -> None:
    """A counter moved by AMOUNT: as many increments of one (Nomad's IncrCounter(key, 1))."""
    counter.inc(amount)
    AGGREGATES.observe(_NAMES[id(counter)], {}, 1.0, amount)
