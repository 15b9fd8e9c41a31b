"""Nomad's `/v1/metrics` JSON (go-metrics' in-memory summary) from Prometheus metric families.

Gauges keep their value. A counter becomes a Counters entry whose Count and Sum are its total;
a histogram becomes a Samples entry with Count, Sum and Mean. Prometheus keeps no minimum,
maximum or deviation: those come from the aggregates the roles keep beside it (`extras`,
app.metrics.aggregates), with Rate; a sample without one (a process of an older release, the
API's own families) leaves those keys out rather than filling them with made-up figures. The
figures are cumulative since each process started, where go-metrics reports its last 10 s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import NotRequired, TypedDict

from prometheus_client.metrics_core import Metric

from app.metrics.aggregates import Extra, LabelKey, label_key


class GaugeJson(TypedDict):
    Name: str
    Value: float
    Labels: dict[str, str]


class SampledJson(TypedDict):
    """go-metrics' SampledValue (its AggregateSample flattened in, with Mean and Stddev)."""

    Name: str
    Count: float
    Rate: NotRequired[float]
    Sum: float
    Min: NotRequired[float]
    Max: NotRequired[float]
    Mean: float
    Stddev: NotRequired[float]
    Labels: dict[str, str]


class MetricsJson(TypedDict):
    Timestamp: str
    Gauges: list[GaugeJson]
    Counters: list[SampledJson]
    Samples: list[SampledJson]
    Points: list[object]


Extras = Mapping[tuple[str, LabelKey], Extra]


def to_nomad_json(
    families: Iterable[Metric], names: Mapping[str, str], now: datetime, extras: Extras | None = None
) -> MetricsJson:
    """`names` maps a Prometheus family name to Nomad's dotted one; others keep their own name.
    `extras` holds, per Prometheus family name and label key, what a sample adds to Count and Sum."""
    extra = extras or {}
    out = MetricsJson(
        Timestamp=now.strftime("%Y-%m-%d %H:%M:%S +0000 UTC"), Gauges=[], Counters=[], Samples=[], Points=[]
    )
    for family in families:
        name = names.get(family.name, family.name)
        if family.type == "gauge":
            out["Gauges"].extend(GaugeJson(Name=name, Value=s.value, Labels=dict(s.labels)) for s in family.samples)
        elif family.type == "counter":
            totals = [s for s in family.samples if s.name.endswith("_total")]
            out["Counters"].extend(
                _sampled(name, s.labels, s.value, s.value, extra.get((family.name, label_key(s.labels))))
                for s in totals
            )
        elif family.type in ("histogram", "summary"):
            out["Samples"].extend(_histograms(name, family, extra))
    for key in ("Gauges", "Counters", "Samples"):
        out[key].sort(key=lambda entry: (entry["Name"], sorted(entry["Labels"].items())))
    return out


def _sampled(name: str, labels: Mapping[str, str], count: float, total: float, extra: Extra | None) -> SampledJson:
    out = SampledJson(Name=name, Count=count, Sum=total, Mean=total / count if count else 0.0, Labels=dict(labels))
    if extra is not None and extra.rate is not None:
        out["Rate"] = extra.rate
    if extra is not None and extra.aggregate is not None:
        out["Min"], out["Max"] = extra.aggregate.minimum, extra.aggregate.maximum
        out["Stddev"] = extra.aggregate.stddev()
    return out


def _histograms(name: str, family: Metric, extra: Extras) -> list[SampledJson]:
    """One entry per label set, from its _count and _sum samples (buckets are Prometheus-only)."""
    counts: dict[tuple[tuple[str, str], ...], float] = {}
    sums: dict[tuple[tuple[str, str], ...], float] = {}
    for sample in family.samples:
        key = tuple(sorted((k, v) for k, v in sample.labels.items() if k not in ("le", "quantile")))
        if sample.name.endswith("_count"):
            counts[key] = sample.value
        elif sample.name.endswith("_sum"):
            sums[key] = sample.value
    return [
        _sampled(name, dict(key), count, sums.get(key, 0.0), extra.get((family.name, label_key(dict(key)))))
        for key, count in counts.items()
    ]
