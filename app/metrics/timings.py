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

# Milliseconds, from a fast plan apply to a slow scheduling pass.
MS_BUCKETS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


# Prometheus name -> Nomad's dotted name, for the JSON view of /v1/metrics.
NOMAD_NAMES: dict[str, str] = {}
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
    return Histogram(prometheus_name(nomad_name), help_text, labels, buckets=MS_BUCKETS, registry=registry)


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
# The families every role publishes for the API servers' /v1/metrics.
PUBLISHED = tuple(HELP)


@contextmanager
def timed(timer: Histogram, **labels: str) -> Iterator[None]:
    """Observe the block's duration in milliseconds, also when it raises."""
    began = time.perf_counter()
    try:
        yield
    finally:
        elapsed_ms = (time.perf_counter() - began) * 1000
        (timer.labels(**labels) if labels else timer).observe(elapsed_ms)
