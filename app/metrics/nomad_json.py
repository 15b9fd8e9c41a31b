"""Nomad's `/v1/metrics` JSON (go-metrics' in-memory summary) from Prometheus metric families.

Gauges keep their value. A counter becomes a Counters entry whose Count and Sum are its total;
a histogram becomes a Samples entry with Count, Sum and Mean. Prometheus keeps no minimum,
maximum or deviation: those come from the aggregates the roles keep beside it (`extras`,
app.metrics.aggregates), with Rate; a sample without one (a process of an older release, the
API's own families) leaves those keys out rather than filling them with made-up figures. Those
figures are cumulative since each process started.

Given an `interval` (app.metrics.intervals), Counters and Samples are instead go-metrics' figures
of that one completed interval, as Nomad reports them, and the Timestamp is its start; the
cumulative counter and histogram families then stay Prometheus-only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NotRequired, TypedDict

from prometheus_client.metrics_core import Metric

from app.metrics.aggregates import Aggregate, Extra, LabelKey, label_key
from app.metrics.intervals import INTERVAL_S, rate


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


@dataclass(frozen=True)
class IntervalView:
    """The figures of one completed interval (of one process, or merged across processes), per
    Prometheus name and label key; `counters` names the keys that are counters, not timers."""

    start: float
    figures: Mapping[tuple[str, LabelKey], Aggregate]
    counters: frozenset[str]
    interval_s: float = INTERVAL_S


def to_nomad_json(
    families: Iterable[Metric],
    names: Mapping[str, str],
    now: datetime,
    extras: Extras | None = None,
    interval: IntervalView | None = None,
) -> MetricsJson:
    """`names` maps a Prometheus family name to Nomad's dotted one; others keep their own name.
    `extras` holds, per Prometheus family name and label key, what a sample adds to Count and Sum.
    With `interval`, Counters and Samples are that interval's (and `extras` is not used)."""
    extra = extras or {}
    stamp = now if interval is None else datetime.fromtimestamp(interval.start, UTC)
    out = MetricsJson(
        Timestamp=stamp.strftime("%Y-%m-%d %H:%M:%S +0000 UTC"), Gauges=[], Counters=[], Samples=[], Points=[]
    )
    if interval is not None:
        _interval_samples(out, interval, names)
    for family in families:
        name = names.get(family.name, family.name)
        if family.type == "gauge":
            out["Gauges"].extend(GaugeJson(Name=name, Value=s.value, Labels=dict(s.labels)) for s in family.samples)
        elif interval is not None:
            continue
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


def _interval_samples(out: MetricsJson, interval: IntervalView, names: Mapping[str, str]) -> None:
    """go-metrics' SampledValue of each key observed in the interval; Count is an integer there."""
    for (name, labels), kept in interval.figures.items():
        sample = SampledJson(
            Name=names.get(name, name),
            Count=int(kept.count),
            Rate=rate(kept.total, interval.interval_s),
            Sum=kept.total,
            Min=kept.minimum,
            Max=kept.maximum,
            Mean=kept.total / kept.count if kept.count else 0.0,
            Stddev=kept.stddev(),
            Labels=dict(label.partition("=")[::2] for label in labels),
        )
        out["Counters" if name in interval.counters else "Samples"].append(sample)
