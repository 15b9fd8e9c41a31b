"""Prometheus families to Nomad's /v1/metrics JSON."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.metrics.aggregates import Aggregate, Aggregates, Extra
from app.metrics.nomad_json import to_nomad_json
from app.metrics.timings import MS_BUCKETS, prometheus_name

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 24, 1, 2, 3, tzinfo=UTC)


def test_gauges_counters_and_timers_keep_nomads_names_and_shape() -> None:
    registry = CollectorRegistry()
    gauge = Gauge(prometheus_name("nomad.test.depth"), "d", ["pool"], registry=registry)
    gauge.labels(pool="gpu").set(3)
    counter = Counter(prometheus_name("nomad.test.rejected"), "r", registry=registry)
    counter.inc(2)
    timer = Histogram(prometheus_name("nomad.test.apply"), "a", ["type"], buckets=MS_BUCKETS, registry=registry)
    timer.labels(type="service").observe(4)
    timer.labels(type="service").observe(6)
    names = {
        "nomad_test_depth": "nomad.test.depth",
        "nomad_test_rejected": "nomad.test.rejected",
        "nomad_test_apply": "nomad.test.apply",
    }

    body = to_nomad_json(registry.collect(), names, NOW)

    assert body["Timestamp"] == "2026-11-24 01:02:03 +0000 UTC" and body["Points"] == []
    assert body["Gauges"] == [{"Name": "nomad.test.depth", "Value": 3.0, "Labels": {"pool": "gpu"}}]
    assert body["Counters"] == [{"Name": "nomad.test.rejected", "Count": 2.0, "Sum": 2.0, "Mean": 1.0, "Labels": {}}]
    assert body["Samples"] == [
        {"Name": "nomad.test.apply", "Count": 2.0, "Sum": 10.0, "Mean": 5.0, "Labels": {"type": "service"}}
    ]


def test_unmapped_families_keep_their_prometheus_name() -> None:
    registry = CollectorRegistry()
    Gauge("python_thing", "t", registry=registry).set(1)
    assert [g["Name"] for g in to_nomad_json(registry.collect(), {}, NOW)["Gauges"]] == ["python_thing"]


def test_prometheus_name_follows_nomads_sink() -> None:
    assert prometheus_name("nomad.nomad.broker.total-ready") == "nomad_nomad_broker_total_ready"


def test_the_grafana_dashboard_only_queries_metrics_corral_exports() -> None:
    import json
    import re
    from pathlib import Path

    from app.api.routes.cluster.metrics import cluster_families
    from app.metrics.timings import NOMAD_NAMES
    from app.store.cluster_metrics import (
        BROKER_TOTALS,
        JOB_SUMMARY_FIELDS,
        ClusterFigures,
        GroupSummary,
        NodeUsage,
    )
    from client.metrics import PROMETHEUS_NAMES as CLIENT_NAMES  # served by each `corral client`

    figures = ClusterFigures(
        broker=dict.fromkeys(BROKER_TOTALS.values(), 0),
        job_status={"running": 1},
        job_summaries=[GroupSummary("default", "web", "g", dict.fromkeys(JOB_SUMMARY_FIELDS, 1))],
        nodes=[NodeUsage("id", "n", "dc1", "none", "default", *[dict.fromkeys(("cpu", "memory", "disk"), 1)] * 2)],
    )
    cluster = {family.name for family in cluster_families(figures)}

    root = Path(__file__).resolve().parents[2]
    dashboard = json.loads((root / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {name for e in exprs for name in re.findall(r"\b(nomad_[a-z_]+)", e)}
    exported = set(NOMAD_NAMES) | cluster | set(CLIENT_NAMES.values())
    suffixes = ("_bucket", "_count", "_sum", "_total")
    unknown = {n for n in used if n not in exported and not any(n.removesuffix(s) in exported for s in suffixes)}
    assert exprs and unknown == set()


def test_go_metrics_aggregates_and_rate_join_the_summary() -> None:
    """Min, Max, Stddev (go-metrics' sample deviation) and Rate from the roles' aggregates;
    a counter's increments of one give Min = Max = 1 and Stddev 0."""
    registry = CollectorRegistry()
    timer = Histogram(prometheus_name("nomad.test.apply"), "a", buckets=MS_BUCKETS, registry=registry)
    counter = Counter(prometheus_name("nomad.test.rejected"), "r", registry=registry)
    aggregates = Aggregates()
    for value in (2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0):
        timer.observe(value)
        aggregates.observe("nomad_test_apply", {}, value)
    counter.inc(3)
    aggregates.observe("nomad_test_rejected", {}, 1.0, 3)
    kept = aggregates.snapshot()
    extras = {key: Extra(aggregate, 4.0) for key, aggregate in kept.items()}
    body = to_nomad_json(registry.collect(), {}, NOW, extras)
    [sample] = body["Samples"]
    assert (sample["Count"], sample["Sum"], sample["Mean"], sample["Min"], sample["Max"]) == (8, 40, 5, 2, 9)
    assert sample["Stddev"] == pytest.approx(math.sqrt(32 / 7)) and sample["Rate"] == 4.0
    [rejected] = body["Counters"]
    assert (rejected["Count"], rejected["Min"], rejected["Max"], rejected["Stddev"]) == (3, 1, 1, 0)
    assert not {"Min", "Max", "Stddev", "Rate"} & set(to_nomad_json(registry.collect(), {}, NOW)["Samples"][0])


def test_one_observation_has_no_deviation() -> None:
    assert Aggregate.of(7.0).stddev() == 0.0
    assert Aggregate.of(2.0).combined(Aggregate.of(4.0)) == Aggregate(2, 6.0, 20.0, 2.0, 4.0)
