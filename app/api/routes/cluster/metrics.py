"""GET /v1/metrics: Nomad's JSON summary, or Prometheus text with `?format=prometheus`.

The cluster's gauges (broker, blocked evaluations, plan queue, heartbeats, job summaries, node
allocation) are computed from the database at each scrape, the scheduler timers are those the
worker and applier processes published there (app/store/published_timings.py), and this process's
runtime gauges follow. The JSON summary's Counters and Samples are go-metrics' figures of the last
completed 10 s interval across the processes that publish intervals (app/metrics/intervals.py);
the Prometheus text stays cumulative. On a schema without timing_intervals (the revision before
it), the JSON falls back to the cumulative figures. Worker, applier and leader processes also
serve their own timings on CORRAL_METRICS_BIND."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from flask import Blueprint, Response
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from app.api.http.context import respond, state
from app.api.http.params import arg
from app.metrics import runtime
from app.metrics.intervals import reported_start
from app.metrics.nomad_json import to_nomad_json
from app.metrics.timings import NOMAD_NAMES, PUBLISHED, prometheus_name
from app.store import published_timings as published
from app.store.cluster_metrics import ClusterFigures, read_cluster_figures
from app.values.errors import InvalidInput

bp = Blueprint("metrics", __name__)
runtime.install()
FORMATS = ("json", "prometheus")
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NODE_LABELS = ("node_id", "host", "datacenter", "node_class", "node_pool")


def _wall_clock() -> datetime:
    return datetime.now(UTC)


clock: Callable[[], datetime] = _wall_clock  # tests set the time the intervals are read at


@bp.get("/metrics")
def metrics() -> Response:
    wanted = arg("format") or "json"
    if wanted not in FORMATS:
        raise InvalidInput.of("format", f"must be one of {', '.join(FORMATS)}, got {wanted!r}")
    now = clock()
    with state().reads() as session, session.begin():
        figures = read_cluster_figures(session)
        interval = (
            None if wanted == "prometheus" else published.merged_interval(session, reported_start(now.timestamp()))
        )
        # The cumulative timers: Prometheus's, and the JSON's on a schema without intervals.
        timers = published.merged(session, now) if interval is None else []
        extras = published.merged_extras(session, now) if interval is None and wanted == "json" else None
    # The roles' timers as they published them; this process's own copies (it schedules
    # nothing) are left out, so each name appears once.
    own = [f for f in REGISTRY.collect() if f.name not in PUBLISHED]
    families = [*cluster_families(figures), *timers, *own]
    if wanted == "prometheus":
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Fixed(families))
        return Response(generate_latest(registry), mimetype=None, content_type=PROMETHEUS_CONTENT_TYPE)
    return respond(to_nomad_json(families, NOMAD_NAMES, now, extras, interval), 0)


class _Fixed(Collector):
    """A collector over families already computed for this scrape."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def _gauge(nomad_name: str, help_text: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(prometheus_name(nomad_name), help_text, labels=list(labels) or None)


def cluster_families(figures: ClusterFigures) -> Iterator[Metric]:
    for total, value in figures.broker.items():
        family = _gauge(f"nomad.nomad.broker.{total}", f"Evaluations in the broker: {total.removeprefix('total_')}.")
        family.add_metric([], value)
        yield family
    for name, value, help_text in (
        ("nomad.nomad.blocked_evals.total_blocked", figures.blocked_total, "Blocked evaluations."),
        (
            "nomad.nomad.blocked_evals.total_escaped",
            figures.blocked_escaped,
            "Blocked evaluations that escaped their computed class.",
        ),
        ("nomad.nomad.plan.queue_depth", figures.plan_queue_depth, "Plans waiting for the applier."),
        ("nomad.nomad.heartbeat.active", figures.heartbeats_active, "Nodes the servers expect heartbeats from."),
    ):
        family = _gauge(name, help_text)
        family.add_metric([], value)
        yield family
    for status, value in figures.job_status.items():
        family = _gauge(f"nomad.nomad.job_status.{status}", f"Jobs with status {status}.")
        family.add_metric([], value)
        yield family
    yield from _job_summary_families(figures)
    yield from _node_families(figures)


def _job_summary_families(figures: ClusterFigures) -> Iterator[Metric]:
    labels = ("job", "task_group", "namespace")
    fields = figures.job_summaries[0].counts.keys() if figures.job_summaries else ()
    for field in fields:
        family = _gauge(f"nomad.nomad.job_summary.{field}", f"Allocations of each task group: {field}.", labels)
        for summary in figures.job_summaries:
            family.add_metric([summary.job_id, summary.task_group, summary.namespace], summary.counts[field])
        yield family


def _node_families(figures: ClusterFigures) -> Iterator[Metric]:
    units = {"cpu": "MHz", "memory": "MB", "disk": "MB"}
    for kind in ("allocated", "unallocated"):
        for resource, unit in units.items():
            family = _gauge(
                f"nomad.client.{kind}.{resource}", f"{resource} {kind} on each live node ({unit}).", NODE_LABELS
            )
            for node in figures.nodes:
                labels = [node.node_id, node.name, node.datacenter, node.node_class, node.node_pool]
                family.add_metric(labels, getattr(node, kind)[resource])
            yield family
