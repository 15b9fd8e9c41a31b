"""Server-side GC: Nomad's eligibility rules, cascades, bounded batches, the run log and the
forced-GC API, against a real migrated database."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app.config import Settings
from app.db import make_sessionmaker
from app.store import gc
from bench.gc_fill import fill_terminal
from tests.integration.conftest import minimal_job
from tests.integration.fixtures import insert_allocation, insert_node
from tests.orphans import orphans

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
DEFAULTS = gc.Thresholds.from_settings(Settings())


def collect(engine: Engine, kind: str, thresholds: gc.Thresholds = DEFAULTS, batch: int = 100) -> gc.Report:
    return gc.Collector(make_sessionmaker(engine), thresholds, batch).run(kind)


def register(client: FlaskClient, job_id: str = "web", **fields: Any) -> str:
    response = client.put("/v1/jobs", json={"Job": minimal_job(job_id, **fields)})
    assert response.status_code == 200, response.json
    return str(response.json["EvalID"])


def finish_eval(pg: Conn, eval_id: str, hours_ago: float) -> None:
    pg.execute(
        "UPDATE evaluations SET status = 'complete', modify_time = now() - %s * interval '1 hour' WHERE id = %s",
        (hours_ago, eval_id),
    )


def age_allocs(pg: Conn, hours_ago: float, **where: str) -> None:
    pg.execute(
        "UPDATE allocations SET modify_time = now() - %s * interval '1 hour' WHERE id = ANY(%s)",
        (hours_ago, list(where.values())),
    )


def count(pg: Conn, table: str, where: str = "true") -> int:
    row = pg.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()
    assert row is not None
    return int(str(row[0]))


def stop_alloc(pg: Conn, alloc_id: str, client_status: str = "complete") -> None:
    pg.execute(
        "UPDATE allocations SET desired_status = 'stop', client_status = %s WHERE id = %s", (client_status, alloc_id)
    )


def test_terminal_eval_is_collected_only_after_its_threshold(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    old, young = register(client, "old"), register(client, "young")
    finish_eval(pg, old, hours_ago=2)
    finish_eval(pg, young, hours_ago=0.5)
    report = collect(engine, "eval-gc")
    assert count(pg, "evaluations", f"id = '{old}'") == 0
    assert count(pg, "evaluations", f"id = '{young}'") == 1
    assert report.removed["evaluations"] == 1


def test_pending_and_blocked_evals_are_never_collected(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    pending, blocked = register(client, "a"), register(client, "b")
    pg.execute(
        "UPDATE evaluations SET modify_time = now() - interval '30 days' WHERE id IN (%s, %s)", (pending, blocked)
    )
    pg.execute("UPDATE evaluations SET status = 'blocked' WHERE id = %s", (blocked,))
    collect(engine, "force-gc", gc.Thresholds.forced())
    assert count(pg, "evaluations", f"id IN ('{pending}', '{blocked}')") == 2


def test_eval_stays_while_an_allocation_lives_but_its_done_allocations_go(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)
    node = insert_node(pg)
    live = insert_allocation(pg, node, eval_id)
    done = insert_allocation(pg, node, eval_id)
    stop_alloc(pg, done)
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 2, a=live, b=done)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{done}'") == 0
    assert count(pg, "allocations", f"id = '{live}'") == 1
    assert count(pg, "evaluations", f"id = '{eval_id}'") == 1


def test_stopped_but_still_running_allocation_is_kept(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    """The server wants it stopped, the client has not stopped it yet: it still holds the node."""
    eval_id = register(client)
    alloc = insert_allocation(pg, insert_node(pg), eval_id)
    stop_alloc(pg, alloc, client_status="running")
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 2, a=alloc)
    collect(engine, "force-gc", gc.Thresholds.forced())
    assert count(pg, "allocations", f"id = '{alloc}'") == 1


def test_batch_evaluations_wait_for_the_batch_threshold_and_keep_current_work(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client, "nightly", Type="batch")
    alloc = insert_allocation(pg, insert_node(pg), eval_id, job_id="nightly", client_status="complete")
    pg.execute("UPDATE allocations SET create_index = (SELECT job_modify_index FROM jobs WHERE id = 'nightly')")
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 30, a=alloc)
    collect(engine, "eval-gc")
    assert count(pg, "evaluations", f"id = '{eval_id}'") == 1  # 2 h < 24 h batch threshold
    finish_eval(pg, eval_id, hours_ago=30)
    collect(engine, "eval-gc")
    # The completed allocation of the job's current version records work done: without it
    # the scheduler would run the batch again, so it (and its evaluation) stay.
    assert count(pg, "allocations", f"id = '{alloc}'") == 1
    assert count(pg, "evaluations", f"id = '{eval_id}'") == 1
    register(client, "nightly", Type="batch", Meta={"v": "2"})  # a new version makes it history
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{alloc}'") == 0
    assert count(pg, "evaluations", f"id = '{eval_id}'") == 0


def test_failed_allocation_is_kept_while_its_reschedule_policy_needs_it(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)  # service: Nomad's default policy reschedules without limit
    node = insert_node(pg)
    failed = insert_allocation(pg, node, eval_id, client_status="failed")
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 2, a=failed)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{failed}'") == 1
    replacement = insert_allocation(pg, node, eval_id)
    pg.execute("UPDATE allocations SET next_allocation = %s WHERE id = %s", (replacement, failed))
    age_allocs(pg, 2, a=failed)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{failed}'") == 0


def test_failed_allocation_without_reschedule_policy_is_collected(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    policy = {"Attempts": 0, "Unlimited": False}
    group = {"Name": "g", "Count": 1, "ReschedulePolicy": policy, "Tasks": [{"Name": "t", "Driver": "mock"}]}
    eval_id = register(client, "once", TaskGroups=[group])
    failed = insert_allocation(pg, insert_node(pg), eval_id, job_id="once", client_status="failed")
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 2, a=failed)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{failed}'") == 0


def test_job_gc_takes_a_stopped_job_with_everything_it_owns(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    eval_id = register(client)
    alloc = insert_allocation(pg, insert_node(pg), eval_id)
    assert client.delete("/v1/job/web").status_code == 200
    stop_alloc(pg, alloc)
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'web'")
    pg.execute(
        "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, snapshot_index, "
        "status, node_update, node_allocation, node_preemptions, deployment_updates) "
        "VALUES (%s, gen_random_uuid(), 1, 'default', 'web', 50, false, 1, 'applied', '{}', '{}', '{}', '[]')",
        (eval_id,),
    )
    collect(engine, "job-gc")
    assert count(pg, "jobs", "id = 'web'") == 1  # younger than the 4 h threshold
    report = collect(engine, "job-gc", gc.Thresholds.forced())
    assert count(pg, "jobs", "id = 'web'") == 0
    assert {k: report.removed[k] for k in ("jobs", "job_versions", "evaluations", "plans", "allocations")} == {
        "jobs": 1,
        "job_versions": 2,
        "evaluations": 2,
        "plans": 1,
        "allocations": 1,
    }
    assert orphans(pg) == []


@pytest.mark.parametrize("reason", ["pending-eval", "tagged-version", "child-job", "running-service"])
def test_job_gc_keeps_jobs_something_still_needs(client: FlaskClient, pg: Conn, engine: Engine, reason: str) -> None:
    register(client)
    if reason != "running-service":
        assert client.delete("/v1/job/web").status_code == 200
    if reason != "pending-eval":
        pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'web'")
    if reason == "tagged-version":
        pg.execute(
            "UPDATE job_versions SET version_tag = '{\"Name\": \"golden\"}' WHERE job_id = 'web' AND version = 0"
        )
    if reason == "child-job":
        register(client, "web/periodic-1", ParentID="web")
        pg.execute("UPDATE evaluations SET status = 'complete'")
    collect(engine, "job-gc", gc.Thresholds.forced())
    assert count(pg, "jobs", "id = 'web'") == 1


def test_dead_batch_job_is_collected_with_its_completed_work(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    eval_id = register(client, "report", Type="batch")
    alloc = insert_allocation(pg, insert_node(pg), eval_id, job_id="report", client_status="complete")
    finish_eval(pg, eval_id, hours_ago=1)
    collect(engine, "force-gc", gc.Thresholds.forced())
    assert count(pg, "jobs", "id = 'report'") == 0
    assert count(pg, "allocations", f"id = '{alloc}'") == 0


def test_node_gc_waits_for_allocations_and_forced_gc_collects_nodes_last(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)
    busy, empty, up = insert_node(pg, name="busy"), insert_node(pg, name="empty"), insert_node(pg, name="up")
    alloc = insert_allocation(pg, busy, eval_id)
    stop_alloc(pg, alloc)
    pg.execute(
        "UPDATE nodes SET status = 'down', status_updated_at = now() - interval '2 days' WHERE id IN (%s, %s)",
        (busy, empty),
    )
    collect(engine, "node-gc")
    assert count(pg, "nodes", f"id = '{empty}'") == 0
    assert count(pg, "nodes", f"id = '{busy}'") == 1  # its allocation still references it
    assert client.delete("/v1/job/web").status_code == 200
    pg.execute("UPDATE evaluations SET status = 'complete'")
    report = collect(engine, "force-gc", gc.Thresholds.forced())
    assert count(pg, "nodes", f"id = '{busy}'") == 0
    assert count(pg, "nodes", f"id = '{up}'") == 1
    assert report.removed["nodes"] == 1
    assert orphans(pg) == []


def insert_deployment(pg: Conn, status: str, hours_ago: float) -> str:
    deployment_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO deployments (id, namespace, job_id, job_version, job_modify_index, job_spec_modify_index, "
        "job_create_index, status, eval_priority, create_index, modify_index, modify_time) "
        "VALUES (%s, 'default', 'web', 0, 1, 1, 1, %s, 50, 1, 1, now() - %s * interval '1 hour')",
        (deployment_id, status, hours_ago),
    )
    return deployment_id


def test_deployment_gc_takes_only_finished_unreferenced_deployments(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)
    done, active, young, referenced = (
        insert_deployment(pg, "successful", 2),
        insert_deployment(pg, "running", 2),
        insert_deployment(pg, "failed", 0.1),
        insert_deployment(pg, "cancelled", 2),
    )
    alloc = insert_allocation(pg, insert_node(pg), eval_id)
    pg.execute("UPDATE allocations SET deployment_id = %s WHERE id = %s", (referenced, alloc))
    collect(engine, "deployment-gc")
    left = {str(r[0]) for r in pg.execute("SELECT id FROM deployments")}
    assert left == {active, young, referenced}
    assert done not in left


def test_scheduled_ticks_queue_one_core_eval_per_collector(engine: Engine, pg: Conn) -> None:
    sessions = make_sessionmaker(engine)
    created = []
    for _ in range(3):
        for kind in gc.SCHEDULED:
            with sessions() as session, session.begin():
                created.append(gc.enqueue_core(session, kind, DEFAULTS))
        with sessions() as session, session.begin():
            created.append(gc.enqueue_core(session, "force-gc", gc.Thresholds.forced()))
    assert len([c for c in created if c is not None]) == 4 + 3
    rows = pg.execute("SELECT job_id, count(*) FROM evaluations WHERE type = '_core' GROUP BY job_id").fetchall()
    assert dict(rows) == {"eval-gc": 1, "job-gc": 1, "node-gc": 1, "deployment-gc": 1, "force-gc": 3}
    assert count(pg, "evaluations", "type = '_core' AND namespace IS NULL AND priority = 200") == 7


def test_batches_never_exceed_the_batch_size(database_url: str, engine: Engine, pg: Conn) -> None:
    fill_terminal(database_url, jobs=10, evals_per_job=7)
    report = collect(engine, "eval-gc", batch=10)
    assert report.removed["evaluations"] == 70
    assert report.removed["allocations"] == 70
    assert report.removed["plans"] == 70
    assert report.largest_batch <= 10 * 3  # at most 10 evaluations, each with a plan and a result
    assert report.batches >= 14


def test_core_eval_run_is_logged_and_shown_by_api_and_view(
    client: FlaskClient, database_url: str, engine: Engine, pg: Conn
) -> None:
    fill_terminal(database_url, jobs=4, evals_per_job=3)
    with core_worker(database_url):
        response = client.put("/v1/system/gc")
    assert response.status_code == 200, response.json
    run = response.json
    assert run["Kind"] == "force-gc" and run["Status"] == "complete"
    assert run["Removed"]["evaluations"] == 12 and run["Removed"]["jobs"] == 1
    assert int(response.headers["X-Nomad-Index"]) > 0
    listed = client.get("/v1/system/gc/runs?limit=5").json
    assert listed[0]["ID"] == run["ID"]
    view = pg.execute("SELECT kind, status, rows_removed FROM v_gc_runs LIMIT 1").fetchone()
    assert view == ("force-gc", "complete", run["RowsRemoved"])
    evals = client.get("/v1/evaluations").json
    core = [e for e in evals if e["ID"] == run["EvalID"]]
    assert core and core[0]["Type"] == "_core" and core[0]["Namespace"] == "-" and core[0]["Status"] == "complete"


def test_gc_runs_limit_is_validated(client: FlaskClient) -> None:
    response = client.get("/v1/system/gc/runs?limit=0")
    assert response.status_code == 400
    assert response.json["errors"][0]["field"] == "limit"


@contextmanager
def core_worker(database_url: str) -> Iterator[None]:
    """A real worker serving only _core evaluations, in a thread, for the duration."""
    from workers.worker import Worker

    stop = threading.Event()
    worker = Worker(Settings(database_url=database_url, poll_interval_s=0.1), database_url, ("_core",))
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
