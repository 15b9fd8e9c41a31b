"""Sharing the roles' timers through the database. A worker or applier measures its work in its
own process; `snapshot` reads that process's cumulative timers and counters, `publish` writes
them under the process's key, and any API server's /v1/metrics `merged` sums the rows of every
process heard from within PUBLISHED_TTL. So the API reports the cluster's scheduling timers, as
Nomad's leader does, rather than its own (it schedules nothing: they would stay at zero).

Each process also publishes its completed go-metrics intervals (`publish_intervals`, table
timing_intervals from revision 0039), and the JSON summary reports the merged figures of one
interval (`merged_interval`); where the table does not exist yet, both do nothing and the summary
stays cumulative.

The invoke_scheduler timer is reported under Nomad's own names, one per scheduler type
(`nomad.nomad.worker.invoke_scheduler.service`), where a role's own endpoint labels it `type`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from sqlalchemy import delete, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.metrics.aggregates import AGGREGATES, Aggregate, Extra, Interval, LabelKey
from app.metrics.intervals import INTERVAL_S, RETAINED
from app.metrics.nomad_json import IntervalView
from app.metrics.timings import COUNTERS, HELP, MS_BUCKETS, prometheus_name
from app.models import PublishedTiming, TimingInterval

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
    aggregate: Aggregate | None = None  # min, max and sum of squares, when the process kept them


def snapshot(
    registry: CollectorRegistry, names: Iterable[str], aggregates: dict[tuple[str, LabelKey], Aggregate] | None = None
) -> list[Figure]:
    """The figures of the families `names` (Prometheus names) in `registry`, each with the
    process's aggregate of it (`aggregates`, by default app.metrics.aggregates.AGGREGATES)."""
    kept = AGGREGATES.snapshot() if aggregates is None else aggregates
    return [replace(f, aggregate=kept.get((f.name, f.labels))) for f in _figures(registry, names)]


def _figures(registry: CollectorRegistry, names: Iterable[str]) -> list[Figure]:
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
    rows of processes silent for FORGET_AFTER. The aggregates go only where the schema has their
    columns (a role of this release may run on the schema before 0037)."""
    with_aggregates = has_aggregate_columns(session)
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
            **(_aggregate_columns(f.aggregate) if with_aggregates else {}),
        }
        for f in figures
    ]
    if rows:
        statement = pg_insert(PublishedTiming).values(rows)
        columns = ["kind", "count", "total", "buckets", "updated_at", *(AGGREGATE_COLUMNS if with_aggregates else ())]
        session.execute(
            statement.on_conflict_do_update(
                index_elements=["process", "name", "labels"], set_={c: statement.excluded[c] for c in columns}
            )
        )
    session.execute(delete(PublishedTiming).where(PublishedTiming.updated_at < now - FORGET_AFTER))


AGGREGATE_COLUMNS = ("sum_squares", "minimum", "maximum")


def has_aggregate_columns(session: Session) -> bool:
    found = session.execute(
        text(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'published_timings' AND column_name = ANY(:names)"
        ),
        {"names": list(AGGREGATE_COLUMNS)},
    ).scalar_one()
    return bool(found == len(AGGREGATE_COLUMNS))


def _aggregate_columns(aggregate: Aggregate | None) -> dict[str, float | None]:
    if aggregate is None:
        return dict.fromkeys(AGGREGATE_COLUMNS)
    return {"sum_squares": aggregate.sum_squares, "minimum": aggregate.minimum, "maximum": aggregate.maximum}


def merged_extras(session: Session, now: datetime) -> dict[tuple[str, LabelKey], Extra]:
    """Per name and label set (as merged() names them): the processes' aggregates combined (None
    once one row has none: a role of an older release, or a schema before 0037) and their rates
    (Sum per second since each process started, from its key's start time) added up."""
    combined: dict[tuple[str, LabelKey], Extra] = {}
    for process, name, labels, aggregate, updated_at in _extra_rows(session, now - PUBLISHED_TTL):
        key = _nomad_form(name, tuple(labels))
        total = aggregate.total if isinstance(aggregate, Aggregate) else aggregate
        mine = Extra(aggregate if isinstance(aggregate, Aggregate) else None, _rate(process, total, updated_at))
        found = combined.get(key)
        combined[key] = mine if found is None else _add(found, mine)
    return combined


def _extra_rows(session: Session, since: datetime) -> list[tuple[str, str, list[str], Aggregate | float, datetime]]:
    """(process, name, labels, its aggregate or, without one, its total, updated_at)."""
    t = PublishedTiming
    if not has_aggregate_columns(session):
        plain = select(t.process, t.name, t.labels, t.total, t.updated_at).where(t.updated_at >= since)
        return [(p, n, list(labels), total, at) for p, n, labels, total, at in session.execute(plain)]
    full = select(
        t.process, t.name, t.labels, t.count, t.total, t.sum_squares, t.minimum, t.maximum, t.updated_at
    ).where(t.updated_at >= since)
    out: list[tuple[str, str, list[str], Aggregate | float, datetime]] = []
    for p, n, labels, count, total, squares, low, high, at in session.execute(full):
        kept = None if squares is None or low is None or high is None else Aggregate(count, total, squares, low, high)
        out.append((p, n, list(labels), kept if kept is not None else total, at))
    return out


def _rate(process: str, total: float, updated_at: datetime) -> float | None:
    """The process's Sum per second since it started (its key ends with its start, in seconds)."""
    started = process.rpartition(":")[2]
    if not started.isdigit():
        return None
    return total / max(updated_at.timestamp() - int(started), 1.0)


def _add(a: Extra, b: Extra) -> Extra:
    aggregate = a.aggregate.combined(b.aggregate) if a.aggregate and b.aggregate else None
    rate = a.rate + b.rate if a.rate is not None and b.rate is not None else None
    return Extra(aggregate, rate)


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


INTERVALS_KEPT = timedelta(seconds=2 * RETAINED * INTERVAL_S)  # older interval rows are deleted


def has_interval_table(session: Session) -> bool:
    """Whether the schema has timing_intervals (revision 0039): this release runs on the one before."""
    return session.execute(text("SELECT to_regclass('timing_intervals') IS NOT NULL")).scalar_one() is True


def publish_intervals(session: Session, process: str, intervals: Iterable[Interval], now: datetime) -> bool:
    """Write this process's completed intervals (idempotent: a row per key and interval) and
    delete every process's rows older than INTERVALS_KEPT. False, writing nothing, where the
    schema has no timing_intervals yet."""
    if not has_interval_table(session):
        return False
    rows = [
        {
            "process": process,
            "name": name,
            "labels": list(labels),
            "interval_start": datetime.fromtimestamp(interval.start, UTC),
            "kind": "counter" if name in COUNTERS else "histogram",
            "count": kept.count,
            "total": kept.total,
            "sum_squares": kept.sum_squares,
            "minimum": kept.minimum,
            "maximum": kept.maximum,
            "updated_at": now,
        }
        for interval in intervals
        for (name, labels), kept in interval.figures.items()
    ]
    if rows:
        statement = pg_insert(TimingInterval).values(rows)
        columns = ("kind", "count", "total", "sum_squares", "minimum", "maximum", "updated_at")
        session.execute(
            statement.on_conflict_do_update(
                index_elements=["process", "name", "labels", "interval_start"],
                set_={c: statement.excluded[c] for c in columns},
            )
        )
    session.execute(delete(TimingInterval).where(TimingInterval.interval_start < now - INTERVALS_KEPT))
    return True


def merged_interval(session: Session, start: float) -> IntervalView | None:
    """The interval starting at `start` (epoch seconds), every process's figures combined per
    name and label set (under Nomad's names, as merged() gives them); None without the table."""
    if not has_interval_table(session):
        return None
    t = TimingInterval
    rows = session.execute(
        select(t.name, t.labels, t.kind, t.count, t.total, t.sum_squares, t.minimum, t.maximum).where(
            t.interval_start == datetime.fromtimestamp(start, UTC)
        )
    )
    figures: dict[tuple[str, LabelKey], Aggregate] = {}
    counters: set[str] = set()
    for name, labels, kind, count, total, squares, low, high in rows:
        key = _nomad_form(name, tuple(labels))
        kept = Aggregate(count, total, squares, low, high)
        found = figures.get(key)
        figures[key] = kept if found is None else found.combined(kept)
        if kind == "counter":
            counters.add(key[0])
    return IntervalView(start, figures, frozenset(counters))
