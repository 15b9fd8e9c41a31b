"""Sharing the roles' timers through the database. A worker or applier measures its work in its
own process; `snapshot` reads that process's cumulative timers and counters, `publish` writes
them under the process's key, and any API server's /v1/metrics `merged` sums the rows of every
process heard from within PUBLISHED_TTL. So the API reports the cluster's scheduling timers, as
Nomad's leader does, rather than its own (it schedules nothing: they would stay at zero).

The invoke_scheduler timer is reported under Nomad's own names, one per scheduler type
(`nomad.nomad.worker.invoke_scheduler.service`), where a role's own endpoint labels it `type`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.metrics.timings import HELP, MS_BUCKETS, prometheus_name
from app.models import PublishedTiming

PUBLISHED_TTL = timedelta(minutes=10)  # a process silent this long has stopped: its figures leave the sum
FORGET_AFTER = timedelta(hours=1)
INVOKE_SCHEDULER = "nomad_nomad_worker_invoke_scheduler"


@dataclass(frozen=True)
class Figure:
    """One timer's (or counter's) cumulative figures for one label set in one process."""

    name: str
    labels: tuple[str, ...]  # sorted key=value
    kind: str  # histogram | counter
    count: float
    total: float
    buckets: tuple[float, ...]  # cumulative, per MS_BUCKETS bound then +Inf; () for a counter


def snapshot(registry: CollectorRegistry, names: Iterable[str]) -> list[Figure]:
    """The figures of the families `names` (Prometheus names) in `registry`."""
    wanted = set(names)
    figures: list[Figure] = []
    for family in registry.collect():
        if family.name not in wanted:
            continue
        if family.type == "histogram":
            figures.extend(_histogram_figures(family))
        elif family.type == "counter":
            figures.extend(
                Figure(family.name, _label_key(s.labels), "counter", s.value, s.value, ())
                for s in family.samples
                if s.name.endswith("_total")
            )
    return figures


def _label_key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(sorted(f"{k}={v}" for k, v in labels.items() if k != "le"))


def _histogram_figures(family: Metric) -> Iterator[Figure]:
    counts: dict[tuple[str, ...], float] = {}
    sums: dict[tuple[str, ...], float] = {}
    buckets: dict[tuple[str, ...], dict[float, float]] = {}
    for sample in family.samples:
        key = _label_key(sample.labels)
        if sample.name.endswith("_bucket"):
            buckets.setdefault(key, {})[float(sample.labels["le"])] = sample.value
        elif sample.name.endswith("_count"):
            counts[key] = sample.value
        elif sample.name.endswith("_sum"):
            sums[key] = sample.value
    for key, count in counts.items():
        by_bound = buckets.get(key, {})
        cumulative = tuple(by_bound.get(float(b), 0.0) for b in (*MS_BUCKETS, math.inf))
        yield Figure(family.name, key, "histogram", count, sums.get(key, 0.0), cumulative)


def publish(session: Session, process: str, figures: Iterable[Figure], now: datetime) -> None:
    """Write this process's figures (cumulative: each write replaces the last) and forget the
    rows of processes silent for FORGET_AFTER."""
    rows = [
        {
            "process": process,
            "name": f.name,
            "labels": list(f.labels),
            "kind": f.kind,
            "count": f.count,
            "total": f.total,
            "buckets": list(f.buckets),
            "updated_at": now,
        }
        for f in figures
    ]
    if rows:
        statement = pg_insert(PublishedTiming).values(rows)
        session.execute(
            statement.on_conflict_do_update(
                index_elements=["process", "name", "labels"],
                set_={c: statement.excluded[c] for c in ("kind", "count", "total", "buckets", "updated_at")},
            )
        )
    session.execute(delete(PublishedTiming).where(PublishedTiming.updated_at < now - FORGET_AFTER))


def merged(session: Session, now: datetime) -> list[Metric]:
    """The published figures of every process heard from within PUBLISHED_TTL, summed per name
    and label set, as Prometheus families under Nomad's names."""
    t = PublishedTiming
    # Columns, not entities: the ORM cannot key its identity map on an array primary key.
    rows = session.execute(
        select(t.name, t.labels, t.kind, t.count, t.total, t.buckets).where(t.updated_at >= now - PUBLISHED_TTL)
    )
    sums: dict[tuple[str, tuple[str, ...], str], list[float]] = {}
    for row in rows:
        name, labels = _nomad_form(row.name, tuple(row.labels))
        figures = [row.count, row.total, *row.buckets]
        current = sums.setdefault((name, labels, row.kind), [0.0] * len(figures))
        if len(current) == len(figures):  # a bucket layout from another release is left out
            sums[(name, labels, row.kind)] = [a + b for a, b in zip(current, figures, strict=True)]
    return _families(sums)


def _nomad_form(name: str, labels: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """Nomad names invoke_scheduler per scheduler type rather than with a label."""
    if name != INVOKE_SCHEDULER:
        return name, labels
    kind = next((label.partition("=")[2] for label in labels if label.startswith("type=")), "")
    rest = tuple(label for label in labels if not label.startswith("type="))
    return prometheus_name(f"nomad.nomad.worker.invoke_scheduler.{kind}"), rest


def _families(sums: dict[tuple[str, tuple[str, ...], str], list[float]]) -> list[Metric]:
    counters: dict[str, CounterMetricFamily] = {}
    histograms: dict[str, HistogramMetricFamily] = {}
    bounds = [*(str(float(b)) for b in MS_BUCKETS), "+Inf"]
    for (name, labels, kind), figures in sorted(sums.items()):
        keys = [label.partition("=")[0] for label in labels]
        values = [label.partition("=")[2] for label in labels]
        base = INVOKE_SCHEDULER if name.startswith(INVOKE_SCHEDULER) else name
        help_text = HELP.get(base, base)  # a name from another release keeps its own name as help
        if kind == "counter":
            counters.setdefault(name, CounterMetricFamily(name, help_text, labels=keys)).add_metric(values, figures[0])
        else:
            family = histograms.setdefault(name, HistogramMetricFamily(name, help_text, labels=keys))
            family.add_metric(values, list(zip(bounds, figures[2:], strict=True)), figures[1])
    return [*counters.values(), *histograms.values()]
