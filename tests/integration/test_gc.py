"""Server-side GC: Nomad's eligibility rules, cascades, bounded batches, the run log and the
forced-GC API, against a real migrated database."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from app import create_app
from app.db.engines import make_engine, make_sessionmaker, transaction
from app.gc.collector import Collector, Report
from app.gc.core_evals import _start_run, enqueue_core, load_core_eval, run_core_eval
from app.gc.thresholds import SCHEDULED, Thresholds
from app.jobspec import normalize_job
from app.settings.config import Settings
from app.store.job.jobs import RegisterOptions, register_job
from bench.gc_fill import fill_terminal
from tests.support.api import json_body, minimal_job
from tests.support.orphans import orphans
from tests.support.pipeline import core_worker
from tests.support.processes import wait_for
from tests.support.rows import insert_allocation, insert_node, pairs

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
DEFAULTS = Thresholds.from_settings(Settings())


def collect(engine: Engine, kind: str, thresholds: Thresholds = DEFAULTS, batch: int = 100) -> Report:
    return Collector(make_sessionmaker(engine), thresholds, batch).run(kind)


def register(client: FlaskClient, job_id: str = "web", **fields: Any) -> str:
    response = client.put("/v1/jobs", json={"Job": minimal_job(job_id, **fields)})
    assert response.status_code == 200, response.json
    return str(json_body(response)["EvalID"])


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
    collect(engine, "force-gc", Thresholds.forced())
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
    collect(engine, "force-gc", Thresholds.forced())
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
    report = collect(engine, "job-gc", Thresholds.forced())
    assert count(pg, "jobs", "id = 'web'") == 0
    assert {k: report.removed[k] for k in ("jobs", "job_versions", "evaluations", "plans", "allocations")} == {
        "jobs": 1,
        "job_versions": 2,
        "evaluations": 2,
        "plans": 1,
        "allocations": 1,
    }
    assert orphans(pg) == []


KEEPERS = (
    "pending-eval",
    "blocked-eval",
    "tagged-version",
    "child-job",
    "running-service",
    "still-running-allocation",
    "active-deployment",
)


@pytest.mark.parametrize("reason", KEEPERS)
def test_job_gc_keeps_jobs_something_still_needs(client: FlaskClient, pg: Conn, engine: Engine, reason: str) -> None:
    """Each reason alone keeps the job from a forced job GC; once it is gone, the same GC
    takes the job (so the test fails if the reason is ignored or the setup was never collectable)."""
    eval_id = register(client)
    if reason != "running-service":
        assert client.delete("/v1/job/web").status_code == 200
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'web'")
    release: Callable[[], None]
    if reason == "pending-eval":
        pg.execute("UPDATE evaluations SET status = 'pending' WHERE id = %s", (eval_id,))
        release = lambda: finish_eval(pg, eval_id, hours_ago=0)  # noqa: E731
    elif reason == "blocked-eval":
        pg.execute("UPDATE evaluations SET status = 'blocked' WHERE id = %s", (eval_id,))
        release = lambda: finish_eval(pg, eval_id, hours_ago=0)  # noqa: E731
    elif reason == "tagged-version":
        pg.execute(
            "UPDATE job_versions SET version_tag = '{\"Name\": \"golden\"}' WHERE job_id = 'web' AND version = 0"
        )

        def release() -> None:
            pg.execute("UPDATE job_versions SET version_tag = NULL")

    elif reason == "child-job":
        register(client, "web/periodic-1", ParentID="web")
        pg.execute("UPDATE evaluations SET status = 'complete'")

        def release() -> None:
            assert client.delete("/v1/job/web%2Fperiodic-1").status_code == 200
            pg.execute("UPDATE evaluations SET status = 'complete'")

    elif reason == "running-service":

        def release() -> None:
            assert client.delete("/v1/job/web").status_code == 200
            pg.execute("UPDATE evaluations SET status = 'complete'")

    elif reason == "still-running-allocation":
        # Stopped by the server, not yet by its client: it still holds the node.
        alloc = insert_allocation(pg, insert_node(pg), eval_id)
        stop_alloc(pg, alloc, client_status="running")
        release = lambda: stop_alloc(pg, alloc)  # noqa: E731
    elif reason == "active-deployment":
        deployment = insert_deployment(pg, "running", 2)

        def release() -> None:
            pg.execute("UPDATE deployments SET status = 'cancelled' WHERE id = %s", (deployment,))

    collect(engine, "job-gc", Thresholds.forced())
    assert count(pg, "jobs", "id = 'web'") == 1
    assert count(pg, "job_versions", "job_id = 'web'") >= 1
    release()
    collect(engine, "job-gc", Thresholds.forced())
    assert count(pg, "jobs") == 0, reason
    assert orphans(pg) == []


def test_job_gc_keeps_a_job_while_an_evaluation_is_younger_than_the_threshold(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)
    assert client.delete("/v1/job/web").status_code == 200
    pg.execute(
        "UPDATE jobs SET submit_time = now() - interval '5 hours', status_updated_at = now() - interval '5 hours', "
        "updated_at = now() - interval '5 hours'"
    )
    pg.execute("UPDATE evaluations SET status = 'complete', modify_time = now() - interval '5 hours'")
    finish_eval(pg, eval_id, hours_ago=1)  # one evaluation 1 h old, under the 4 h job threshold
    collect(engine, "job-gc")
    assert count(pg, "jobs", "id = 'web'") == 1
    finish_eval(pg, eval_id, hours_ago=5)
    collect(engine, "job-gc")
    assert count(pg, "jobs", "id = 'web'") == 0


def test_forced_gc_keeps_a_running_service_job_and_everything_its_work_needs(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    first = register(client)
    current = register(client, Meta={"v": "2"})
    node = insert_node(pg)
    running = [insert_allocation(pg, node, current) for _ in range(2)]
    old = insert_allocation(pg, node, first)
    pg.execute("UPDATE allocations SET job_version = 0 WHERE id = %s", (old,))
    stop_alloc(pg, old)
    deployment = insert_deployment(pg, "successful", 30)
    pg.execute("UPDATE evaluations SET status = 'complete', modify_time = now() - interval '30 days'")
    pg.execute("UPDATE allocations SET modify_time = now() - interval '30 days'")
    pg.execute("UPDATE jobs SET submit_time = now() - interval '30 days', updated_at = now() - interval '30 days'")
    report = collect(engine, "force-gc", Thresholds.forced())
    assert report.removed["allocations"] == 1 and report.removed["deployments"] == 1  # the old work went
    assert count(pg, "jobs", "id = 'web' AND NOT stop") == 1
    assert count(pg, "job_versions", "job_id = 'web' AND version = 1") == 1
    assert {str(r[0]) for r in pg.execute("SELECT id FROM allocations")} == set(running)
    assert count(pg, "evaluations", f"id = '{current}'") == 1  # the evaluation its allocations name
    assert count(pg, "deployments", f"id = '{deployment}'") == 0
    assert orphans(pg) == []
    # Stopped and finished, the same forced GC takes it all.
    assert client.delete("/v1/job/web").status_code == 200
    pg.execute("UPDATE evaluations SET status = 'complete'")
    pg.execute("UPDATE allocations SET desired_status = 'stop', client_status = 'complete'")
    collect(engine, "force-gc", Thresholds.forced())
    for table in ("jobs", "job_versions", "allocations", "evaluations"):
        assert count(pg, table) == 0, table


def test_dead_batch_job_is_collected_with_its_completed_work(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    eval_id = register(client, "report", Type="batch")
    alloc = insert_allocation(pg, insert_node(pg), eval_id, job_id="report", client_status="complete")
    finish_eval(pg, eval_id, hours_ago=1)
    collect(engine, "force-gc", Thresholds.forced())
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
    report = collect(engine, "force-gc", Thresholds.forced())
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
        for kind in SCHEDULED:
            with sessions() as session, session.begin():
                created.append(enqueue_core(session, kind, DEFAULTS))
        with sessions() as session, session.begin():
            created.append(enqueue_core(session, "force-gc", Thresholds.forced()))
    assert len([c for c in created if c is not None]) == 4 + 3
    rows = pg.execute("SELECT job_id, count(*) FROM evaluations WHERE type = '_core' GROUP BY job_id").fetchall()
    assert pairs(rows) == {"eval-gc": 1, "job-gc": 1, "node-gc": 1, "deployment-gc": 1, "force-gc": 3}
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
    run = json_body(response)
    assert run["Kind"] == "force-gc" and run["Status"] == "complete"
    assert run["Removed"]["evaluations"] == 12 and run["Removed"]["jobs"] == 1
    assert int(response.headers["X-Nomad-Index"]) > 0
    listed = json_body(client.get("/v1/system/gc/runs?limit=5"))
    assert listed[0]["ID"] == run["ID"]
    view = pg.execute("SELECT kind, status, rows_removed FROM v_gc_runs LIMIT 1").fetchone()
    assert view == ("force-gc", "complete", run["RowsRemoved"])
    evals = json_body(client.get("/v1/evaluations"))
    core = [e for e in evals if e["ID"] == run["EvalID"]]
    assert core and core[0]["Type"] == "_core" and core[0]["Namespace"] == "-" and core[0]["Status"] == "complete"


def test_gc_runs_limit_is_validated(client: FlaskClient) -> None:
    response = client.get("/v1/system/gc/runs?limit=0")
    assert response.status_code == 400
    assert json_body(response)["errors"][0]["field"] == "limit"


# --- Reschedule policy -------------------------------------------------------------------


def test_failed_allocation_is_kept_while_its_last_reschedule_is_within_the_interval(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    policy = {
        "Attempts": 2,
        "Interval": 3600 * 10**9,
        "Delay": 5 * 10**9,
        "DelayFunction": "constant",
        "Unlimited": False,
    }
    group = {"Name": "g", "Count": 1, "ReschedulePolicy": policy, "Tasks": [{"Name": "t", "Driver": "mock"}]}
    eval_id = register(client, "web", TaskGroups=[group])
    failed = insert_allocation(pg, insert_node(pg), eval_id, client_status="failed")
    finish_eval(pg, eval_id, hours_ago=2)

    def rescheduled(minutes_ago: int) -> None:
        pg.execute(
            "UPDATE allocations SET reschedule_tracker = jsonb_build_object('Events', jsonb_build_array("
            "jsonb_build_object('RescheduleTime', "
            "(extract(epoch FROM now() - %s * interval '1 minute') * 1e9)::bigint))), "
            "modify_time = now() - interval '2 hours' WHERE id = %s",
            (minutes_ago, failed),
        )

    rescheduled(minutes_ago=30)  # within the 1 h interval: the policy may still use it
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{failed}'") == 1
    rescheduled(minutes_ago=90)  # the interval has passed: nothing will count it any more
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{failed}'") == 0


def test_forced_gc_collects_a_dead_batch_job_whose_failed_allocation_could_still_reschedule(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    """Batch jobs default to one reschedule attempt a day. Once nothing runs and no evaluation
    is pending or blocked, nothing will reschedule that allocation: the job is dead and goes."""
    node = insert_node(pg)
    dead = register(client, "etl", Type="batch")
    failed = insert_allocation(pg, node, dead, job_id="etl", client_status="failed")
    live = register(client, "etl-live", Type="batch")
    insert_allocation(pg, node, live, job_id="etl-live", client_status="failed")
    insert_allocation(pg, node, live, job_id="etl-live", client_status="running")
    pg.execute("UPDATE evaluations SET status = 'complete'")
    collect(engine, "force-gc", Thresholds.forced())
    assert count(pg, "jobs", "id = 'etl'") == 0
    assert count(pg, "allocations", f"id = '{failed}'") == 0
    assert count(pg, "jobs", "id = 'etl-live'") == 1  # still running: not dead
    assert count(pg, "allocations", "job_id = 'etl-live'") == 2
    assert orphans(pg) == []


# --- Job GC in row-bounded batches -------------------------------------------------------


def stopped_job_with_work(client: FlaskClient, pg: Conn, allocations: int, evaluations: int = 4) -> str:
    """A stopped service job with many finished allocations, evaluations with plans, finished
    deployments and several versions: everything collectable."""
    eval_id = register(client)
    for v in range(2):
        register(client, Meta={"v": str(v)})
    assert client.delete("/v1/job/web").status_code == 200
    node = insert_node(pg)
    pg.execute(
        "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status, "
        "create_index, modify_index) SELECT gen_random_uuid(), 'default', 'web', 50, 'service', 'job-register', 1, "
        "'complete', 1, 1 FROM generate_series(1, %s)",
        (evaluations,),
    )
    pg.execute(
        "INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, snapshot_index, "
        "status, node_update, node_allocation, node_preemptions, deployment_updates) "
        "SELECT id, gen_random_uuid(), 1, 'default', 'web', 50, false, 1, 'applied', '{}', '{}', '{}', '[]' "
        "FROM evaluations WHERE job_id = 'web'"
    )
    pg.execute("INSERT INTO plan_results (plan_id, applier_term) SELECT id, 1 FROM plans")
    pg.execute(
        "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
        "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
        "modify_index, alloc_modify_index) "
        "SELECT gen_random_uuid(), 'default', 'web', 0, %s, %s, 'n1', 'g', 'web.g[' || i || ']', 'stop', "
        "'complete', 100, 64, 64, 10, 1, 1, 1 FROM generate_series(1, %s) i",
        (eval_id, node, allocations),
    )
    for status in ("successful", "failed", "cancelled"):
        insert_deployment(pg, status, 2)
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'web'")
    return eval_id


def test_job_gc_takes_a_job_with_more_allocations_than_a_batch_in_bounded_batches(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    stopped_job_with_work(client, pg, allocations=130)
    versions, evals, plans = (count(pg, t) for t in ("job_versions", "evaluations", "plans"))
    report = collect(engine, "job-gc", Thresholds.forced(), batch=20)
    assert count(pg, "jobs") == 0
    assert dict(report.removed) == {
        "jobs": 1,
        "job_versions": versions,
        "evaluations": evals,
        "plans": plans,
        "plan_results": plans,
        "allocations": 130,
        "deployments": 3,
    }
    assert report.largest_batch <= 20  # rows per transaction, not jobs
    assert report.batches >= 130 // 20
    assert orphans(pg) == []


def test_a_job_revived_while_job_gc_trims_it_keeps_the_rest(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    """Between two batches the job is registered again: the next batch's re-check fails and the
    job keeps its current version and remaining work; what went was finished with anyway."""
    stopped_job_with_work(client, pg, allocations=60)
    sessions = make_sessionmaker(engine)
    calls = 0

    def revive_after_two_batches() -> None:
        nonlocal calls
        calls += 1
        if calls == 4:  # the candidate window, then two batches
            with transaction(sessions) as session:
                register_job(session, normalize_job(minimal_job("web")), RegisterOptions())

    report = Collector(sessions, Thresholds.forced(), 10, revive_after_two_batches).run("job-gc")
    assert calls > 4
    assert 0 < report.removed["allocations"] < 60 and not report.removed["jobs"]
    job = pg.execute("SELECT stop, version FROM jobs WHERE id = 'web'").fetchone()
    assert job is not None and job[0] is False
    assert count(pg, "job_versions", f"job_id = 'web' AND version = {job[1]}") == 1
    assert count(pg, "evaluations", "job_id = 'web' AND status = 'pending'") == 1
    assert orphans(pg) == []


def test_an_allocation_that_outlives_its_delete_keeps_what_it_references(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    """Should one allocation of a job being collected stay (its client's update won the race
    for the row; here a test-only trigger skips its delete), the later statements leave its
    evaluation, version and job alone instead of failing the run on a foreign key."""
    eval_id = stopped_job_with_work(client, pg, allocations=5)
    pg.execute(
        "CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; "
        "CREATE TRIGGER keep_one BEFORE DELETE ON allocations FOR EACH ROW "
        "WHEN (OLD.name = 'web.g[1]') EXECUTE FUNCTION keep_row()"
    )
    report = collect(engine, "job-gc", Thresholds.forced(), batch=20)
    assert report.removed["allocations"] == 4
    assert count(pg, "allocations") == 1
    assert count(pg, "evaluations", f"id = '{eval_id}'") == 1
    assert count(pg, "job_versions", "job_id = 'web' AND version = 0") == 1
    assert count(pg, "jobs", "id = 'web'") == 1
    assert orphans(pg) == []


TIMEOUT_TRIGGER = """
CREATE FUNCTION cancel_big_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM gone) > %(most)s THEN
        RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = 'query_canceled';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER cancel_big_deletes AFTER DELETE ON allocations REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION cancel_big_deletes();
"""


def test_a_batch_cancelled_by_the_statement_timeout_runs_again_with_half_the_rows(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    """Test-only trigger: deleting more than 4 allocations in one statement is cancelled with
    57014, as a statement timeout would."""
    stopped_job_with_work(client, pg, allocations=25)
    pg.execute(TIMEOUT_TRIGGER.replace("%(most)s", "4"))
    report = collect(engine, "job-gc", Thresholds.forced(), batch=20)
    assert count(pg, "jobs") == 0 and count(pg, "allocations") == 0
    assert report.timeouts == 3  # 20 -> 10 -> 5 -> 2 rows
    assert report.largest_batch <= 3
    assert orphans(pg) == []


def test_a_batch_that_times_out_even_with_one_row_fails_the_run_loudly(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    stopped_job_with_work(client, pg, allocations=5)
    pg.execute(TIMEOUT_TRIGGER.replace("%(most)s", "0"))
    sessions = make_sessionmaker(engine)
    with transaction(sessions) as session:
        eval_id = enqueue_core(session, "job-gc", Thresholds.forced())
    assert eval_id is not None
    with pytest.raises(DBAPIError) as raised:
        run_core_eval(sessions, eval_id, "test", 4, DEFAULTS)
    assert getattr(raised.value.orig, "sqlstate", None) == "57014"
    run = pg.execute("SELECT status, timeouts, error FROM gc_runs").fetchone()
    assert run is not None and run[:2] == ("failed", 2)  # 4 -> 2 -> 1 row, then it gives up
    assert "statement timeout" in str(run[2])
    assert count(pg, "allocations") == 5


# --- Job GC's candidate scan -------------------------------------------------------------


def test_job_gc_judges_each_candidate_once_per_run(database_url: str, client: FlaskClient, pg: Conn) -> None:
    """Live batch jobs are candidates that never qualify. The run walks them once; it does
    not rescan them for every batch (counted with track_functions)."""
    live = 60
    for i in range(live):
        register(client, f"busy-{i:03}", Type="batch")  # pending evaluations keep them
    for i in range(8):
        register(client, f"zz-done-{i}", Type="batch")
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id LIKE 'zz-done-%'")
    name = pg.info.dbname
    pg.execute(f"ALTER DATABASE \"{name}\" SET track_functions = 'all'")
    engine = make_engine(database_url, "test")
    try:
        report = Collector(make_sessionmaker(engine), Thresholds.forced(), 20).run("job-gc")
    finally:
        engine.dispose()  # its backends exit, flushing their function statistics
    assert report.removed["jobs"] == 8
    assert wait_for(lambda: _calls(pg, "corral_job_collectable_v2") > 0, timeout=30)
    calls = _calls(pg, "corral_job_collectable_v2")
    # One window judgement per candidate, plus the locked jobs' re-checks in each batch.
    assert calls < 2 * live, calls


def _calls(pg: Conn, function: str) -> int:
    pg.execute("SELECT pg_stat_clear_snapshot()")
    row = pg.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = %s", (function,))
    found = row.fetchone()
    return int(str(found[0])) if found else 0


def test_job_gc_candidate_scan_uses_its_partial_index(client: FlaskClient, pg: Conn) -> None:
    for i in range(30):
        register(client, f"svc-{i:02}")
    pg.execute("ANALYZE jobs")
    pg.execute("SET enable_seqscan = off")
    from app.store.sql import _queries

    statement = _queries()["gc_job_candidates"]
    params = {"after_namespace": "", "after_id": "", "limit": 5, "as_of": "now", "threshold_s": 0}
    for key, value in params.items():
        statement = statement.replace(f":{key}", f"'{value}'" if isinstance(value, str) else str(value))
    plan = "\n".join(str(r[0]) for r in pg.execute(f"EXPLAIN {statement}").fetchall())
    assert "ix_jobs_gc_candidates" in plan, plan


# --- Node GC -----------------------------------------------------------------------------


def test_node_gc_is_not_held_up_by_down_nodes_that_still_hold_allocations(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    eval_id = register(client)
    held = [insert_node(pg, name=f"held-{i}") for i in range(3)]
    for node in held:
        stop_alloc(pg, insert_allocation(pg, node, eval_id))  # terminal, but its evaluation keeps it
    empty = insert_node(pg, name="empty")
    pg.execute(
        "UPDATE nodes SET status = 'down', status_updated_at = now() - interval '3 days' WHERE id = ANY(%s::uuid[])",
        (held,),
    )
    pg.execute(
        "UPDATE nodes SET status = 'down', status_updated_at = now() - interval '2 days' WHERE id = %s", (empty,)
    )
    report = collect(engine, "node-gc", batch=2)  # the two oldest down nodes both hold allocations
    assert count(pg, "nodes", f"id = '{empty}'") == 0
    assert count(pg, "nodes", "name LIKE 'held-%'") == 3
    assert report.removed["nodes"] == 1


def test_node_gc_collects_unblock_markers_of_classes_no_node_has(pg: Conn, engine: Engine) -> None:
    insert_node(pg)  # class v1:1
    pg.execute("INSERT INTO class_unblocks (computed_class, unblock_index) VALUES ('v1:1', 5), ('v1:gone', 7)")
    report = collect(engine, "node-gc")
    assert [r[0] for r in pg.execute("SELECT computed_class FROM class_unblocks")] == ["v1:1"]
    assert report.removed["class_unblocks"] == 1
    assert orphans(pg) == []


# --- Parents and children ----------------------------------------------------------------


def test_a_child_job_needs_an_existing_parent(client: FlaskClient) -> None:
    for parent in ("nope", "orphan"):
        response = client.put("/v1/jobs", json={"Job": minimal_job("orphan", ParentID=parent)})
        assert response.status_code == 400, response.json
        assert json_body(response)["errors"][0]["field"] == "Job.ParentID"


def test_a_child_registered_while_job_gc_runs_keeps_its_parent(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    """The child's registration is still open (uncommitted, invisible to GC) while a forced job
    GC runs. The parent must survive: GC skips it (the child key-shares it) instead of deleting
    it under the child."""
    register(client, "nightly", Type="batch", Periodic={"Spec": "0 3 * * *"})
    assert client.delete("/v1/job/nightly").status_code == 200
    sessions = make_sessionmaker(engine)
    finished = threading.Event()

    def job_gc() -> None:
        try:
            collect(engine, "job-gc", Thresholds.forced())
        finally:
            finished.set()

    with transaction(sessions) as registrar:
        child = minimal_job("nightly/periodic-1", Type="batch", ParentID="nightly")
        register_job(registrar, normalize_job(child), RegisterOptions())
        collector = threading.Thread(target=job_gc)
        collector.start()
        # Without the parent's key-share, GC deletes it and then waits for the state index,
        # which this open registration holds: either way, go on once GC is done or stuck.
        wait_for(lambda: finished.is_set() or count(pg, "jobs", "id = 'nightly'") == 0, timeout=30)
    collector.join(timeout=30)
    assert finished.is_set()
    assert count(pg, "jobs", "id = 'nightly'") == 1
    assert count(pg, "jobs", "parent_id = 'nightly'") == 1
    assert orphans(pg) == []


# --- The run log ---------------------------------------------------------------------------


def test_a_run_left_running_by_a_dead_worker_is_marked_interrupted(pg: Conn, engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    with transaction(sessions) as session:
        dead = enqueue_core(session, "eval-gc", DEFAULTS)
    assert dead is not None
    with transaction(sessions) as session:  # a worker started it, then died
        _start_run(session, load_core_eval(session, dead, DEFAULTS), "dead-worker")
    pg.execute("UPDATE evaluations SET status = 'failed' WHERE id = %s", (dead,))  # as the lease reaper does
    with transaction(sessions) as session:
        later = enqueue_core(session, "eval-gc", DEFAULTS)
    assert later is not None
    run_core_eval(sessions, later, "worker", 100, DEFAULTS)
    runs = pg.execute("SELECT eval_id, status FROM gc_runs ORDER BY id").fetchall()
    assert [(str(e), s) for e, s in runs] == [(str(dead), "interrupted"), (str(later), "complete")]
    assert orphans(pg) == []


def test_a_core_eval_without_thresholds_applies_the_configured_ones(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    old, young = register(client, "old"), register(client, "young")
    finish_eval(pg, old, hours_ago=2)
    finish_eval(pg, young, hours_ago=0.5)
    sessions = make_sessionmaker(engine)
    with transaction(sessions) as session:
        eval_id = enqueue_core(session, "eval-gc", DEFAULTS)
    pg.execute("UPDATE evaluations SET core_params = NULL WHERE id = %s", (eval_id,))
    assert eval_id is not None
    run_core_eval(sessions, eval_id, "worker", 100, DEFAULTS)
    assert count(pg, "evaluations", f"id = '{old}'") == 0
    assert count(pg, "evaluations", f"id = '{young}'") == 1  # not the forced zero thresholds


def index_stamps(pg: Conn) -> int:
    """How many write transactions have taken an index (no leader compacts the log here)."""
    row = pg.execute("SELECT count(DISTINCT value) FROM state_index").fetchone()
    assert row is not None
    return int(str(row[0]))


def test_an_idle_tick_takes_no_index(pg: Conn, engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    with transaction(sessions) as session:
        queued = enqueue_core(session, "eval-gc", DEFAULTS)
    assert queued is not None
    before = index_stamps(pg)
    with transaction(sessions) as session:
        assert enqueue_core(session, "eval-gc", DEFAULTS) is None  # already queued: writes nothing
    report = run_core_eval(sessions, queued, "worker", 100, DEFAULTS)  # nothing to collect
    assert not report.removed
    assert index_stamps(pg) == before
    assert pg.execute("SELECT status FROM gc_runs").fetchall() == [("complete",)]


def test_preempted_allocation_ids_are_history_once_the_victims_are_collected(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    """A live preemptor keeps the ids of the allocations it evicted after GC removed them, as
    Nomad's PreemptedAllocations does; GC never rewrites live allocations."""
    eval_id = register(client)
    node = insert_node(pg)
    victim, preemptor = insert_allocation(pg, node, eval_id), insert_allocation(pg, node, eval_id)
    stop_alloc(pg, victim)
    pg.execute("UPDATE allocations SET desired_status = 'evict' WHERE id = %s", (victim,))
    pg.execute("UPDATE allocations SET preempted_allocations = ARRAY[%s::uuid] WHERE id = %s", (victim, preemptor))
    finish_eval(pg, eval_id, hours_ago=2)
    age_allocs(pg, 2, a=victim)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{victim}'") == 0
    kept = pg.execute("SELECT preempted_allocations FROM allocations WHERE id = %s", (preemptor,)).fetchone()
    assert kept is not None and isinstance(kept[0], list) and [str(v) for v in kept[0]] == [victim]
    assert orphans(pg) == []


def test_history_links_keep_the_ids_of_what_gc_collected(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    """Previous/next/preempted-by allocation, follow-up and previous/next/blocked evaluation links
    are history, as in Nomad: GC collects what they name and leaves the live rows untouched
    (nulling a follow-up link would make a failed allocation look as if it never got one)."""
    old_eval, live_eval = register(client), register(client, "live")
    node = insert_node(pg)
    old = insert_allocation(pg, node, old_eval)
    stop_alloc(pg, old)
    live = insert_allocation(pg, node, live_eval, job_id="live")
    pg.execute(
        "UPDATE allocations SET previous_allocation = %(old)s, preempted_by_allocation = %(old)s, "
        "followup_eval_id = %(e)s WHERE id = %(live)s",
        {"old": old, "e": old_eval, "live": live},
    )
    pg.execute("UPDATE allocations SET next_allocation = %s WHERE id = %s", (live, old))
    pg.execute(
        "UPDATE evaluations SET previous_eval = %(e)s, next_eval = %(e)s, blocked_eval = %(e)s WHERE id = %(live)s",
        {"e": old_eval, "live": live_eval},
    )
    finish_eval(pg, old_eval, hours_ago=2)
    age_allocs(pg, 2, a=old)
    collect(engine, "eval-gc")
    assert count(pg, "allocations", f"id = '{old}'") == 0
    assert count(pg, "evaluations", f"id = '{old_eval}'") == 0
    links = pg.execute(
        "SELECT previous_allocation, preempted_by_allocation, followup_eval_id FROM allocations WHERE id = %s", (live,)
    ).fetchone()
    assert links is not None and [str(v) for v in links] == [old, old, old_eval]
    evals = pg.execute(
        "SELECT previous_eval, next_eval, blocked_eval FROM evaluations WHERE id = %s", (live_eval,)
    ).fetchone()
    assert evals is not None and [str(v) for v in evals] == [old_eval] * 3
    assert orphans(pg) == []


def test_gc_stamps_the_state_index_once_for_batches_within_the_interval(
    database_url: str, pg: Conn, engine: Engine
) -> None:
    """Batches commit asynchronously; one synchronous stamp after them wakes blocking queries
    (and makes the batches durable), not one per batch."""
    fill_terminal(database_url, jobs=2, evals_per_job=10)
    before = index_stamps(pg)
    hourly = Collector(make_sessionmaker(engine), Thresholds.forced(), 3, stamp_interval_s=3600)
    report = hourly.run("eval-gc")
    assert report.batches >= 10
    assert report.removed["evaluations"] == 20
    assert index_stamps(pg) == before + 1


def test_gc_with_no_stamp_interval_stamps_after_every_batch(database_url: str, pg: Conn, engine: Engine) -> None:
    fill_terminal(database_url, jobs=2, evals_per_job=10)
    before = index_stamps(pg)
    eager = Collector(make_sessionmaker(engine), Thresholds.forced(), 3, stamp_interval_s=0)
    eager.run("eval-gc")
    assert index_stamps(pg) - before >= 14  # 20 allocations, then 20 evaluations, 3 at a time


def test_a_failed_gc_run_still_stamps_what_it_deleted(database_url: str, pg: Conn, engine: Engine) -> None:
    """A run that stops half way (here: its worker lost the lease after three batches) still
    stamps the index for what it deleted, so blocking queries wake."""
    fill_terminal(database_url, jobs=1, evals_per_job=10)
    before = index_stamps(pg)
    checks = 0

    def lease_lost_after_three_batches() -> None:
        nonlocal checks
        checks += 1
        if checks > 3:
            raise RuntimeError("lease lost")

    collector = Collector(
        make_sessionmaker(engine), Thresholds.forced(), 4, lease_lost_after_three_batches, stamp_interval_s=3600
    )
    with pytest.raises(RuntimeError, match="lease lost"):
        collector.run("eval-gc")
    assert collector.report.removed["allocations"] == 10
    assert count(pg, "allocations") == 0
    assert index_stamps(pg) == before + 1


# --- The forced-GC API: every waiter gets its answer -------------------------------------


@contextmanager
def api(database_url: str, **settings: Any) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, **settings), database_url)
    try:
        yield app
    finally:
        app.extensions["corral"].close()


class Waiter(threading.Thread):
    """PUT /v1/system/gc from its own thread (it blocks until the collection ends)."""

    def __init__(self, app: Flask) -> None:
        super().__init__(daemon=True)
        self.app = app
        self.status = 0
        self.body: Any = None

    def run(self) -> None:
        response = self.app.test_client().put("/v1/system/gc")
        self.status, self.body = response.status_code, response.json

    def answer(self) -> tuple[int, Any]:
        self.join(timeout=60)
        assert not self.is_alive(), "no answer"
        return self.status, self.body


def forced_evals(pg: Conn, where: str = "true") -> int:
    return count(pg, "evaluations", f"job_id = 'force-gc' AND {where}")


def test_two_forced_gcs_at_once_both_answer_when_one_collects_the_others_evaluation(
    database_url: str, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both waiters look only after both runs are over, and the second run (thresholds zero)
    collected the first one's finished evaluation: the first waiter must still find its run."""
    from app.api.routes.cluster import system

    both_ran = threading.Event()
    wait_for_run = system._wait_for_run

    def late(eval_id: uuid.UUID, deadline: float) -> tuple[Any, int]:
        both_ran.wait(60)
        return wait_for_run(eval_id, deadline)

    monkeypatch.setattr(system, "_wait_for_run", late)
    with api(database_url, force_gc_wait_s=15) as app:
        first = Waiter(app)
        first.start()
        assert wait_for(lambda: forced_evals(pg) == 1)
        second = Waiter(app)
        second.start()
        assert wait_for(lambda: forced_evals(pg) == 2)
        with core_worker(database_url):
            assert wait_for(lambda: forced_evals(pg, "status = 'pending'") == 0)
        assert forced_evals(pg) == 1  # the race happened: the first evaluation is gone
        both_ran.set()
        answers = [first.answer(), second.answer()]
    assert [status for status, _ in answers] == [200, 200], answers
    assert [body["Status"] for _, body in answers] == ["complete", "complete"]
    assert answers[0][1]["ID"] != answers[1][1]["ID"]


def test_forced_gc_still_running_at_the_deadline_answers_504_naming_what_to_do(database_url: str) -> None:
    with api(database_url, force_gc_wait_s=0.5) as app:  # and no worker: it never runs
        response = app.test_client().put("/v1/system/gc")
    assert response.status_code == 504, response.json
    detail = json_body(response)["detail"]
    assert "still running" in detail and "corral system gc-runs" in detail


def test_forced_gc_that_fails_answers_500_with_the_error(
    database_url: str, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Collector, kind: str) -> Report:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Collector, "run", broken)
    with api(database_url, force_gc_wait_s=60) as app:
        waiter = Waiter(app)
        waiter.start()
        assert wait_for(lambda: forced_evals(pg) == 1)
        # Its last allowed delivery: the worker's nack fails the evaluation.
        pg.execute("UPDATE evaluations SET delivery_count = 2 WHERE job_id = 'force-gc'")
        with core_worker(database_url):
            status, body = waiter.answer()
    assert status == 500, body
    assert "disk on fire" in body["detail"] and "failed" in body["detail"]
    assert forced_evals(pg, "status = 'failed'") == 1


def test_forced_gc_whose_worker_died_answers_500_once_its_evaluation_failed(database_url: str, pg: Conn) -> None:
    with api(database_url, force_gc_wait_s=60) as app:
        waiter = Waiter(app)
        waiter.start()
        assert wait_for(lambda: forced_evals(pg) == 1)
        row = pg.execute("SELECT id FROM evaluations WHERE job_id = 'force-gc'").fetchone()
        assert row is not None
        eval_id = uuid.UUID(str(row[0]))
        engine = make_engine(database_url, "test")
        try:
            with transaction(make_sessionmaker(engine)) as session:  # a worker started it, then died
                _start_run(session, load_core_eval(session, eval_id, DEFAULTS), "dead-worker")
        finally:
            engine.dispose()
        # The lease reaper fails it on its last delivery.
        pg.execute("UPDATE evaluations SET status = 'failed' WHERE id = %s", (eval_id,))
        pg.execute("INSERT INTO state_index (name, value) VALUES ('evaluations', state_index_own())")
        status, body = waiter.answer()
    assert status == 500, body
    assert "interrupted" in body["detail"]
