"""The scheduler timers in the API's /v1/metrics are those the worker and applier processes
publish to the database: they move after scheduling work (they were constant 0, the API process
scheduling nothing), under Nomad's names; and every process reports Nomad's runtime gauges."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg
import pytest
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from app.db.engines import libpq_url, make_engine, make_sessionmaker, transaction
from app.metrics.aggregates import Aggregate
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


def test_scheduler_timers_move_after_scheduling_work(client: FlaskClient, database_url: str) -> None:
    from workers.applier import run_applier
    from workers.worker import Worker

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
    body = client.get("/v1/metrics").json
    assert body is not None
    samples = {s["Name"]: s for s in body["Samples"]}
    assert samples["nomad.nomad.worker.invoke_scheduler.service"]["Count"] >= 1
    evaluate = samples["nomad.nomad.plan.evaluate"]
    assert 0 < evaluate["Min"] <= evaluate["Mean"] <= evaluate["Max"] and evaluate["Stddev"] >= 0
    assert evaluate["Rate"] > 0  # ms of plan checking per second


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


def test_samples_carry_go_metrics_min_max_stddev_and_rate(client: FlaskClient, database_url: str) -> None:
    """Two appliers observed 10, 20 (started 10,000 s ago) and 30 ms (started 1,000 s ago): the
    JSON summary reports go-metrics' figures of the three observations. (Processes this old make
    the Rate insensitive to the seconds a loaded machine takes between publishing and reading.)"""
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
    aggregates, and the summary leaves those keys out."""
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        for column in published.AGGREGATE_COLUMNS:
            pg.execute(f"ALTER TABLE published_timings DROP COLUMN {column}")
    now = datetime.now(UTC)
    publish_rows(database_url, [(f"applier:a:1:{int(now.timestamp()) - 50}", timing(2, 30.0, None))], now)
    publish_rows(database_url, [("applier:b", timing(1, 10.0, Aggregate(1, 10.0, 100.0, 10.0, 10.0)))], now)
    sample = plan_apply(client)
    assert sample["Count"] == 3 and not {"Min", "Max", "Stddev", "Rate"} & set(sample)
