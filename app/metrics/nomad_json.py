"""Nomad's `/v1/metrics` JSON (go-metrics' in-memory summary) from Prometheus metric families.

Gauges keep their value. A counter becomes a Counters entry whose Count and Sum are its total;
a histogram becomes a Samples entry with Count, Sum and Mean. Prometheus keeps no minimum,
maximum or deviation, so those keys are left out rather than filled with made-up figures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TypedDict

from prometheus_client.metrics_core import Metric


class GaugeJson(TypedDict):
    Name: str
    Value: float
    Labels: dict[str, str]


class SampledJson(TypedDict):
    Name: str
    Count: float
    Sum: float
    Mean: float
    Labels: dict[str, str]


class MetricsJson(TypedDict):
    Timestamp: str
    Gauges: list[GaugeJson]
    Counters: list[SampledJson]
    Samples: list[SampledJson]
    Points: list[object]


def to_nomad_json(families: Iterable[Metric], names: Mapping[str, str], now: datetime) -> MetricsJson:
    """`names` maps a Prometheus family name to Nomad's dotted one; others keep their own name."""
    out = MetricsJson(
        Timestamp=now.strftime("%Y-%m-%d %H:%M:%S +0000 UTC"), Gauges=[], Counters=[], Samples=[], Points=[]
    )
    for family in families:
        name = names.get(family.name, family.name)
        if family.type == "gauge":
            out["Gauges"].extend(GaugeJson(Name=name, Value=s.value, Labels=dict(s.labels)) for s in family.samples)
        elif family.type == "counter":
            totals = [s for s in family.samples if s.name.endswith("_total")]
            out["Counters"].extend(_sampled(name, s.labels, s.value, s.value) for s in totals)
        elif family.type in ("histogram", "summary"):
            out["Samples"].extend(_histograms(name, family))
    for key in ("Gauges", "Counters", "Samples"):
        out[key].sort(key=lambda entry: (entry["Name"], sorted(entry["Labels"].items())))
    return out


def _sampled(name: str, labels: Mapping[str, str], count: float, total: float) -> SampledJson:
    return SampledJson(Name=name, Count=count, Sum=total, Mean=total / count if count else 0.0, Labels=dict(labels))


def _histograms(name: str, family: Metric) -> list[SampledJson]:
    """One entry per label set, from its _count and _sum samples (buckets are Prometheus-only)."""
    counts: dict[tuple[tuple[str, str], ...], float] = {}
    sums: dict[tuple[tuple[str, str], ...], float] = {}
    for sample in family.samples:
        key = tuple(sorted((k, v) for k, v in sample.labels.items() if k not in ("le", "quantile")))
        if sample.name.endswith("_count"):
            counts[key] = sample.value
        elif sample.name.endswith("_sum"):
            sums[key] = sample.value
    return [_sampled(name, dict(key), count, sums.get(key, 0.0)) for key, count in counts.items()]
