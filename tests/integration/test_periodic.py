"""Periodic jobs against a real database: the leader's duty driven with an explicit clock, the
launch record that never repeats a time, prohibit_overlap, the catch-up after a gap, and the
forced launch through the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.leader.periodic_launch import launch_due
from app.store.job import periodic as periodic_store
from app.store.job.periodic import LAUNCH_TABLES
from tests.support.api import json_body, minimal_job
from tests.support.rows import Conn

pytestmark = pytest.mark.integration
T0 = datetime(2030, 1, 1, tzinfo=UTC)  # after any registration time in these tests


def register(client: FlaskClient, job_id: str = "nightly", **periodic: Any) -> dict[str, Any]:
    spec = minimal_job(job_id, Type="batch", Periodic={"Spec": "0 * * * *", **periodic})
    response = client.put("/v1/jobs", json={"Job": spec})
    assert response.status_code == 200, response.json
    assert isinstance(response.json, dict)
    return response.json


def tick(engine: Engine, now: datetime) -> int:
    with Session(engine) as session, session.begin():
        return launch_due(session, now)


def children(pg: Conn, parent: str = "nightly") -> list[tuple[Any, ...]]:
    return pg.execute(
        "SELECT j.id, j.parent_id, j.periodic, j.create_index, e.triggered_by, e.create_index, e.type "
        "FROM jobs j LEFT JOIN evaluations e ON e.namespace = j.namespace AND e.job_id = j.id "
        "WHERE j.parent_id = %s ORDER BY j.id",
        (parent,),
    ).fetchall()


def last_launch(pg: Conn, job_id: str = "nightly") -> tuple[Any, ...] | None:
    return pg.execute("SELECT launch_time, skipped FROM periodic_launches WHERE job_id = %s", (job_id,)).fetchone()


def unix(t: datetime) -> int:
    return int(t.timestamp())


def test_registering_records_the_registration_as_the_last_launch(client: FlaskClient, pg: Conn) -> None:
    body = register(client)
    assert body["EvalID"] == ""
    row = pg.execute(
        "SELECT l.launch_time = j.submit_time, j.periodic FROM periodic_launches l JOIN jobs j ON j.id = l.job_id"
    ).fetchone()
    assert row == (True, True)
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == (0,)


def test_a_due_launch_creates_the_child_and_its_evaluation_together(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    register(client)
    pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))
    assert tick(engine, T0 + timedelta(minutes=59)) == 0
    assert children(pg) == []
    launch = T0 + timedelta(hours=1)
    assert tick(engine, launch + timedelta(milliseconds=300)) == 1
    [(child, parent, periodic, job_index, trigger, eval_index, eval_type)] = children(pg)
    assert (child, parent, periodic, trigger, eval_type) == (
        f"nightly/periodic-{unix(launch)}",
        "nightly",
        False,
        "periodic-job",
        "batch",
    )
    assert job_index == eval_index  # one transaction
    assert last_launch(pg) == (launch, False)
    spec = client.get(f"/v1/job/nightly/periodic-{unix(launch)}").json
    assert spec is not None and spec["ParentID"] == "nightly" and spec["Periodic"] is None
    assert spec["Name"] == f"nightly/periodic-{unix(launch)}"
    # The same tick again launches nothing.
    assert tick(engine, launch + timedelta(seconds=1)) == 0
    assert len(children(pg)) == 1


def test_a_launched_time_is_never_launched_again_even_once_its_child_is_gone(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    register(client)
    pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))
    launch = T0 + timedelta(hours=1)
    assert tick(engine, launch) == 1
    pg.execute("DELETE FROM evaluations")
    pg.execute("DELETE FROM job_versions WHERE job_id LIKE 'nightly/%%'")
    pg.execute("DELETE FROM jobs WHERE parent_id = 'nightly'")  # as job GC would
    assert tick(engine, launch) == 0
    # Even a leader that read the record before that launch (a stale reader) cannot make it again.
    with Session(engine) as session, session.begin():
        index = next_index(session, LAUNCH_TABLES)
        assert periodic_store.launch(session, "default", "nightly", launch, index, forced=False) is None
    assert children(pg) == []


def test_after_a_gap_only_the_most_recent_missed_launch_is_made_once(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    register(client)
    pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))
    now = T0 + timedelta(hours=7, minutes=20)  # 7 launches missed while no leader ran
    assert tick(engine, now) == 1
    assert [c[0] for c in children(pg)] == [f"nightly/periodic-{unix(T0 + timedelta(hours=7))}"]
    assert tick(engine, now + timedelta(minutes=5)) == 0
    assert len(children(pg)) == 1


def test_prohibit_overlap_skips_while_a_child_runs_and_records_the_skip(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    register(client, ProhibitOverlap=True)
    pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))
    first = T0 + timedelta(hours=1)
    assert tick(engine, first) == 1  # its evaluation is pending: the child still runs
    second = first + timedelta(hours=1)
    assert tick(engine, second) == 0
    assert last_launch(pg) == (second, True)
    assert len(children(pg)) == 1
    pg.execute("UPDATE evaluations SET status = 'complete'")  # the child is done
    # A skipped time is not made up for later: the next launch is the next scheduled one.
    assert tick(engine, second + timedelta(minutes=30)) == 0
    third = second + timedelta(hours=1)
    assert tick(engine, third) == 1
    assert last_launch(pg) == (third, False)
    assert [c[0] for c in children(pg)] == [f"nightly/periodic-{unix(t)}" for t in (first, third)]


def test_without_prohibit_overlap_children_overlap(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    register(client)
    pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))
    assert tick(engine, T0 + timedelta(hours=1)) == 1
    assert tick(engine, T0 + timedelta(hours=2)) == 1
    assert len(children(pg)) == 2


def test_disabled_and_stopped_periodic_jobs_do_not_launch(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    register(client, "off", Enabled=False)
    register(client, "stopped")
    assert client.delete("/v1/job/stopped").status_code == 200
    assert pg.execute("SELECT id, periodic FROM jobs ORDER BY id").fetchall() == [("off", True), ("stopped", True)]
    assert tick(engine, T0 + timedelta(days=1)) == 0
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == (0,)


def test_force_launches_now_with_an_evaluation(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    register(client, ProhibitOverlap=True)
    before = int(datetime.now(UTC).timestamp())
    first = client.post("/v1/job/nightly/periodic/force")
    assert first.status_code == 200, first.json
    body = first.json
    assert body is not None and set(body) == {"EvalID", "EvalCreateIndex", "Index"}
    row = pg.execute(
        "SELECT e.job_id, e.triggered_by, e.create_index, j.create_index, j.parent_id FROM evaluations e "
        "JOIN jobs j ON j.namespace = e.namespace AND j.id = e.job_id WHERE e.id = %s",
        (body["EvalID"],),
    ).fetchone()
    assert row is not None
    child, trigger, eval_index, job_index, parent = row
    assert (trigger, parent, eval_index, job_index) == ("periodic-job", "nightly", body["Index"], body["Index"])
    assert isinstance(child, str) and child.startswith("nightly/periodic-")
    assert int(child.rsplit("-", 1)[1]) >= before
    forced_at = datetime.fromtimestamp(int(child.rsplit("-", 1)[1]), UTC)
    recorded = last_launch(pg)
    assert recorded is not None and recorded[0] >= forced_at
    # Forced again: another child, overlap or not (as Nomad's force).
    second = client.post("/v1/job/nightly/periodic/force")
    assert second.status_code in (200, 409), second.json  # 409 only within the same second
    if second.status_code == 409:
        assert second.json is not None and second.json["errors"][0]["field"] == "JobID"
    # The leader does not launch the forced second again.
    assert tick(engine, forced_at) == 0


@pytest.mark.parametrize(
    ("job", "status", "message"),
    [
        ("missing", 404, "not found"),
        ("plain", 400, "is not periodic"),
        ("off", 400, "disabled"),
    ],
)
def test_force_refuses_what_cannot_launch(client: FlaskClient, pg: Conn, job: str, status: int, message: str) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("plain", Type="batch")})
    register(client, "off", Enabled=False)
    response = client.put(f"/v1/job/{job}/periodic/force")
    assert response.status_code == status, response.json
    assert response.json is not None
    [error] = response.json["errors"]
    assert error["field"] == "JobID" and message in error["message"]
    assert pg.execute("SELECT count(*) FROM jobs WHERE parent_id IS NOT NULL").fetchone() == (0,)


@pytest.mark.parametrize(
    ("periodic", "field"),
    [
        ({"Spec": "61 * * * *"}, "Job.Periodic.Spec"),
        ({"Spec": "0 0 31 2 * * *"}, "Job.Periodic.Spec"),
        ({"Specs": ["@daily", "0 25 * * *"]}, "Job.Periodic.Specs[1]"),
        ({"Spec": "@daily", "TimeZone": "Moon/Base"}, "Job.Periodic.TimeZone"),
    ],
)
def test_bad_periodic_blocks_are_400_naming_the_field(
    client: FlaskClient, pg: Conn, periodic: dict[str, Any], field: str
) -> None:
    response = client.put("/v1/jobs", json={"Job": minimal_job("nightly", Type="batch", Periodic=periodic)})
    assert response.status_code == 400
    assert response.json is not None and field in {e["field"] for e in response.json["errors"]}
    assert pg.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


def test_a_job_that_becomes_periodic_gets_an_evaluation_that_stops_its_allocations(
    client: FlaskClient, pg: Conn
) -> None:
    from tests.support.rows import insert_allocation, insert_node

    eval_id = json_body(client.put("/v1/jobs", json={"Job": minimal_job("nightly", Type="batch")}))["EvalID"]
    insert_allocation(pg, insert_node(pg), eval_id, job_id="nightly")
    assert register(client)["EvalID"] != ""  # it has a running allocation to stop
    pg.execute("UPDATE allocations SET client_status = 'complete'")
    assert register(client, TimeZone="Europe/Berlin")["EvalID"] == ""
