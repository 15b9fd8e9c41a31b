"""The scheduler timers in the API's /v1/metrics are those the worker and applier processes
publish to the database: they move after scheduling work (they were constant 0, the API process
scheduling nothing), under Nomad's names; and every process reports Nomad's runtime gauges."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg
import pytest
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from app.api.routes.cluster import metrics as metrics_route
from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.metrics import timings
from app.metrics.aggregates import Aggregate, Aggregates, Interval
from app.metrics.intervals import INTERVAL_S, SETTLE_S, interval_start
from app.metrics.timings import PUBLISHED
from app.settings.config import Settings
from app.store import published_timings as published
from tests.support.pipeline import pipeline_quiet, register_mock_job
from tests.support.processes import wait_for
from tests.support.rows import add_nodes

pytestmark = pytest.mark.integration
Figures = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: FlaskClient) -> Figures:
    resp = client.get("/v1/metrics?format=prometheus")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(resp.get_data(as_text=True))
        for sample in family.samples
    }


def publish_now(database_url: str, process: str) -> None:
    engine = make_engine(database_url, "test", pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            published.publish(session, process, published.snapshot(REGISTRY, PUBLISHED), datetime.now(UTC))
    finally:
        engine.dispose()


@contextmanager
def running(target: Callable[[threading.Event], None]) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


TIMERS = (
    "nomad_nomad_worker_invoke_scheduler_service_count",
    "nomad_nomad_worker_dequeue_eval_count",
    "nomad_nomad_worker_submit_plan_count",
    "nomad_nomad_plan_evaluate_count",
    "nomad_nomad_plan_apply_count",
)


class Held:
    """A clock that stays where the test puts it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def recent_start() -> float:
    """The start of the current interval (interval rows older than two minutes are deleted)."""
    return interval_start(time.time())


def stamp(start: float) -> str:
    return datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def test_scheduler_timers_move_after_scheduling_work(
    client: FlaskClient, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.applier import run_applier
    from workers.worker import Worker

    t0 = recent_start()
    held = Held(t0)
    held_aggregates = Aggregates(held)
    monkeypatch.setattr(timings, "AGGREGATES", held_aggregates)

    process = f"test:host:1:{int(datetime.now(UTC).timestamp()) - 60}"  # as a role's key: ends with its start
    publish_now(database_url, process)  # what this process measured before (other tests)
    before = scrape(client)
    assert ("nomad_nomad_worker_invoke_scheduler_count", (("type", "service"),)) not in before  # Nomad's names
    settings = Settings(database_url=database_url, poll_interval_s=0.1)
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        add_nodes(pg, 1, cpu=4000)
        engine = make_engine(database_url, "test")
        try:
            register_mock_job(engine, "web", 2, 100)
        finally:
            engine.dispose()
        worker = Worker(settings, database_url, ("service",))
        with running(lambda stop: run_applier(settings, database_url, stop)), running(worker.run):
            assert wait_for(lambda: pipeline_quiet(pg), 60)
            placed = pg.execute("SELECT count(*) FROM allocations WHERE job_id = 'web'").fetchone()
            assert placed == (2,)
    publish_now(database_url, process)
    after = scrape(client)
    for name in TIMERS:
        assert after[(name, ())] > before.get((name, ()), 0.0), name
        assert after[(name.replace("_count", "_sum"), ())] > before.get((name.replace("_count", "_sum"), ()), 0.0)
    # The JSON summary: the interval the work was done in (the process's clock held at t0 while
    # it ran), once it has completed and been published.
    held.now = t0 + INTERVAL_S
    engine = make_engine(database_url, "test", pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            assert published.publish_intervals(session, process, held_aggregates.completed(), datetime.now(UTC))
    finally:
        engine.dispose()
    monkeypatch.setattr(metrics_route, "clock", lambda: datetime.fromtimestamp(t0 + INTERVAL_S + SETTLE_S, UTC))
    body = client.get("/v1/metrics").json
    assert body is not None and body["Timestamp"] == stamp(t0)
    samples = {s["Name"]: s for s in body["Samples"]}
    assert samples["nomad.nomad.worker.invoke_scheduler.service"]["Count"] >= 1
    evaluate = samples["nomad.nomad.plan.evaluate"]
    assert 0 < evaluate["Min"] <= evaluate["Mean"] <= evaluate["Max"] and evaluate["Stddev"] >= 0
    assert evaluate["Rate"] == pytest.approx(evaluate["Sum"] / INTERVAL_S)  # ms of plan checking per second


def test_published_figures_of_processes_sum_and_silent_ones_drop_out(client: FlaskClient, database_url: str) -> None:
    engine = make_engine(database_url, "test", pool_size=1)
    now = datetime.now(UTC)
    figure = published.Figure("nomad_nomad_plan_apply", (), "histogram", 2, 30.0, (0,) * 6 + (2,) * 10)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            published.publish(session, "applier:a", [figure], now)
            published.publish(session, "applier:b", [figure], now)
            published.publish(session, "applier:old", [figure], now - published.PUBLISHED_TTL * 2)
    finally:
        engine.dispose()
    figures = scrape(client)
    assert figures[("nomad_nomad_plan_apply_count", ())] == 4
    assert figures[("nomad_nomad_plan_apply_sum", ())] == 60
    assert figures[("nomad_nomad_plan_apply_bucket", (("le", "+Inf"),))] == 4
    assert figures[("nomad_nomad_plan_apply_bucket", (("le", "5.0"),))] == 0


def test_the_role_publishes_while_it_runs_and_when_it_stops(database_url: str) -> None:
    from workers.timings_publisher import publishing

    with publishing(database_url, "worker", threading.Event()):
        pass
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        rows = pg.execute("SELECT DISTINCT process, name FROM published_timings").fetchall()
    assert rows and all(str(process).startswith("worker:") for process, _ in rows)
    assert {str(name) for _, name in rows} >= {"nomad_nomad_plan_node_rejected"}


def test_runtime_gauges_under_nomads_names(client: FlaskClient) -> None:
    figures = scrape(client)
    runtime = {name: value for (name, labels), value in figures.items() if name.startswith("nomad_runtime_")}
    assert set(runtime) == {
        "nomad_runtime_num_goroutines",
        "nomad_runtime_alloc_bytes",
        "nomad_runtime_sys_bytes",
        "nomad_runtime_heap_objects",
        "nomad_runtime_total_gc_runs",
        "nomad_runtime_total_gc_pause_ns",
    }
    assert runtime["nomad_runtime_num_goroutines"] >= 1 and runtime["nomad_runtime_alloc_bytes"] > 1_000_000
    assert runtime["nomad_runtime_sys_bytes"] >= runtime["nomad_runtime_alloc_bytes"]
    body = client.get("/v1/metrics").json
    assert body is not None
    gauges = {g["Name"]: g for g in body["Gauges"]}
    assert (
        gauges["nomad.runtime.heap_objects"]["Value"] > 0 and "host" in gauges["nomad.runtime.heap_objects"]["Labels"]
    )


def timing(count: int, total: float, aggregate: Aggregate | None) -> published.Figure:
    buckets = (0.0,) * 6 + (float(count),) * 10
    return published.Figure("nomad_nomad_plan_apply", (), "histogram", count, total, buckets, aggregate)


def publish_rows(database_url: str, rows: list[tuple[str, published.Figure]], now: datetime) -> None:
    engine = make_engine(database_url, "test", pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            for process, figure in rows:
                published.publish(session, process, [figure], now)
    finally:
        engine.dispose()


def plan_apply(client: FlaskClient) -> dict[str, object]:
    body = client.get("/v1/metrics").json
    assert body is not None
    [sample] = [s for s in body["Samples"] if s["Name"] == "nomad.nomad.plan.apply"]
    return dict(sample)


def drop_intervals(database_url: str) -> None:
    """The schema before revision 0039, which this release's roles and API must run on."""
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        pg.execute("DROP TABLE timing_intervals")


def test_samples_carry_go_metrics_min_max_stddev_and_rate(client: FlaskClient, database_url: str) -> None:
    """Two appliers observed 10, 20 (started 10,000 s ago) and 30 ms (started 1,000 s ago): the
    JSON summary reports go-metrics' figures of the three observations. (Processes this old make
    the Rate insensitive to the seconds a loaded machine takes between publishing and reading.)
    On the schema before timing_intervals (0039), the summary keeps these cumulative figures."""
    drop_intervals(database_url)
    now = datetime.now(UTC)
    start = int(now.timestamp())
    first = Aggregate(2, 30.0, 500.0, 10.0, 20.0)
    second = Aggregate(1, 30.0, 900.0, 30.0, 30.0)
    publish_rows(
        database_url,
        [
            (f"applier:a:1:{start - 10_000}", timing(2, 30.0, first)),
            (f"applier:b:2:{start - 1_000}", timing(1, 30.0, second)),
        ],
        now,
    )
    sample = plan_apply(client)
    assert (sample["Count"], sample["Sum"], sample["Mean"]) == (3, 60, 20)
    assert (sample["Min"], sample["Max"]) == (10, 30) and sample["Stddev"] == pytest.approx(10.0)
    assert sample["Rate"] == pytest.approx(30 / 10_000 + 30 / 1_000, rel=0.05)
    publish_rows(database_url, [(f"applier:old:3:{start}", timing(1, 5.0, None))], now)  # an older role
    older = plan_apply(client)
    assert older["Count"] == 4 and not {"Min", "Max", "Stddev"} & set(older)


def test_roles_publish_on_the_schema_before_the_aggregates(client: FlaskClient, database_url: str) -> None:
    """A role of this release on the schema before 0038 publishes its figures without the
    aggregates, and the summary leaves those keys out (before 0039 too: the cumulative summary)."""
    drop_intervals(database_url)
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        for column in published.AGGREGATE_COLUMNS:
            pg.execute(f"ALTER TABLE published_timings DROP COLUMN {column}")
    now = datetime.now(UTC)
    publish_rows(database_url, [(f"applier:a:1:{int(now.timestamp()) - 50}", timing(2, 30.0, None))], now)
    publish_rows(database_url, [("applier:b", timing(1, 10.0, Aggregate(1, 10.0, 100.0, 10.0, 10.0)))], now)
    sample = plan_apply(client)
    assert sample["Count"] == 3 and not {"Min", "Max", "Stddev", "Rate"} & set(sample)


def publish_intervals(database_url: str, process: str, intervals: list[Interval]) -> bool:
    engine = make_engine(database_url, "test", pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            return published.publish_intervals(session, process, intervals, datetime.now(UTC))
    finally:
        engine.dispose()


APPLY = ("nomad_nomad_plan_apply", ())
REJECTED = ("nomad_nomad_plan_node_rejected", ())
SERVICE = ("nomad_nomad_worker_invoke_scheduler", ("type=service",))


def test_the_summary_reports_the_last_completed_interval_of_every_process(
    client: FlaskClient, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes publish two intervals each: read 2 s after the second ended, the summary is
    the second interval's figures of both, merged (go-metrics' DisplayMetrics); a key observed
    only in the first is absent. The cumulative rows (an older release's) stay out of it."""
    t0 = recent_start()
    first, second = t0 - 2 * INTERVAL_S, t0 - INTERVAL_S
    assert publish_intervals(
        database_url,
        "applier:a:1:1",
        [
            Interval(first, {APPLY: Aggregate(3, 300.0, 30_000.0, 100.0, 100.0), REJECTED: Aggregate.of(1.0)}),
            Interval(second, {APPLY: Aggregate(2, 30.0, 500.0, 10.0, 20.0), SERVICE: Aggregate.of(7.0)}),
        ],
    )
    assert publish_intervals(
        database_url,
        "applier:b:2:1",
        [Interval(second, {APPLY: Aggregate.of(30.0), REJECTED: Aggregate(2, 2.0, 2.0, 1.0, 1.0)})],
    )
    publish_rows(database_url, [("applier:old:3:1", timing(50, 5000.0, None))], datetime.now(UTC))
    monkeypatch.setattr(metrics_route, "clock", lambda: datetime.fromtimestamp(t0 + SETTLE_S, UTC))
    body = client.get("/v1/metrics").json
    assert body is not None and body["Timestamp"] == stamp(second)
    samples = {s["Name"]: s for s in body["Samples"]}
    assert samples["nomad.nomad.plan.apply"] == {
        "Name": "nomad.nomad.plan.apply",
        "Count": 3,
        "Rate": 6.0,
        "Sum": 60.0,
        "Min": 10.0,
        "Max": 30.0,
        "Mean": 20.0,
        "Stddev": pytest.approx(10.0),
        "Labels": {},
    }
    assert samples["nomad.nomad.worker.invoke_scheduler.service"]["Count"] == 1  # Nomad's name per type
    [rejected] = body["Counters"]
    assert (rejected["Name"], rejected["Count"], rejected["Sum"], rejected["Rate"]) == (
        "nomad.nomad.plan.node_rejected", 2, 2.0, 0.2
    )  # fmt: skip
    # A second sooner, the second interval may not be published yet: the summary is the first's.
    monkeypatch.setattr(metrics_route, "clock", lambda: datetime.fromtimestamp(t0 + SETTLE_S - 1, UTC))
    earlier = client.get("/v1/metrics").json
    assert earlier is not None and earlier["Timestamp"] == stamp(first)
    [apply] = [s for s in earlier["Samples"] if s["Name"] == "nomad.nomad.plan.apply"]
    assert (apply["Count"], apply["Sum"], apply["Rate"]) == (3, 300.0, 30.0)
    # The Prometheus text stays cumulative: the older release's rows are in it.
    assert scrape(client)[("nomad_nomad_plan_apply_count", ())] == 50


def test_the_role_publishes_its_completed_intervals(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from workers import timings_publisher

    t0 = recent_start()
    held = Held(t0 + 1)
    kept = Aggregates(held)
    kept.observe("nomad_nomad_plan_apply", {}, 4.0)
    held.now = t0 + INTERVAL_S + 1  # that interval has ended
    monkeypatch.setattr(timings_publisher, "AGGREGATES", kept)
    with timings_publisher.publishing(database_url, "applier", threading.Event()):
        pass
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        rows = pg.execute("SELECT process, name, count, total, interval_start FROM timing_intervals").fetchall()
    assert [(str(r[0]).split(":")[0], r[1], r[2], r[3], r[4].timestamp()) for r in rows] == [
        ("applier", "nomad_nomad_plan_apply", 1.0, 4.0, t0)
    ]


def test_without_the_interval_table_nothing_is_published_there(database_url: str) -> None:
    drop_intervals(database_url)
    assert not publish_intervals(database_url, "applier:a:1:1", [Interval(recent_start(), {APPLY: Aggregate.of(1.0)})])
