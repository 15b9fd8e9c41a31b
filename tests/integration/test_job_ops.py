"""Job operations over HTTP: scale (bounds, events, deployments), alloc stop, revert, stable,
and version pruning."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import create_app
from app.settings.config import Settings
from app.store.job import job_scale
from tests.support.api import json_body, minimal_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]


def scaled_job(job_id: str = "web", *, count: int = 2, low: int = 1, high: int = 5) -> dict[str, Any]:
    job = minimal_job(job_id)
    job["TaskGroups"][0].update(Count=count, Scaling={"Min": low, "Max": high})
    return job


def register(client: FlaskClient, job: dict[str, Any]) -> dict[str, Any]:
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 200, resp.json
    body: dict[str, Any] = json_body(resp)
    return body


def counts(pg: Conn) -> tuple[object, ...]:
    row = pg.execute(
        "SELECT (SELECT count(*) FROM job_versions), (SELECT count(*) FROM evaluations), "
        "(SELECT count(*) FROM job_scaling_events), (SELECT max(value) FROM state_index)"
    ).fetchone()
    assert row is not None
    return row


def fields(resp: Any) -> set[str]:
    return {e["field"] for e in resp.json["errors"]}


def test_scaling_block_is_validated_at_registration(client: FlaskClient) -> None:
    resp = client.put("/v1/jobs", json={"Job": scaled_job(count=7, low=1, high=5)})
    assert resp.status_code == 400
    assert "Job.TaskGroups[0].Count" in fields(resp)
    job = minimal_job()
    job["TaskGroups"][0]["Scaling"] = {"Min": 3}
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 400
    assert "Job.TaskGroups[0].Scaling.Max" in fields(resp)
    job["TaskGroups"][0]["Scaling"] = {"Min": 4, "Max": 3}
    assert "Job.TaskGroups[0].Scaling.Max" in fields(client.put("/v1/jobs", json={"Job": job}))


def test_scale_creates_version_event_and_job_scaling_eval_together(client: FlaskClient, pg: Conn) -> None:
    register(client, scaled_job())
    resp = client.post("/v1/job/web/scale", json={"Count": 4, "Target": {"Group": "g"}, "Message": "busy"})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body is not None and body["EvalID"]
    job = client.get("/v1/job/web").json
    assert job is not None and job["Version"] == 1 and job["TaskGroups"][0]["Count"] == 4
    row = pg.execute(
        "SELECT triggered_by, status, create_index, job_modify_index FROM evaluations WHERE id = %s",
        (body["EvalID"],),
    ).fetchone()
    assert row == ("job-scaling", "pending", body["Index"], job["JobModifyIndex"])
    version = pg.execute("SELECT job_modify_index FROM job_versions WHERE job_id = 'web' AND version = 1").fetchone()
    assert version == (body["Index"],)
    status = client.get("/v1/job/web/scale").json
    assert status is not None
    group = status["TaskGroups"]["g"]
    assert group["Desired"] == 4
    [event] = group["Events"]
    assert (event["Count"], event["PreviousCount"], event["Message"], event["EvalID"]) == (
        4,
        2,
        "busy",
        body["EvalID"],
    )


def test_scale_is_all_or_nothing_when_the_eval_insert_fails(
    client: FlaskClient, engine: Engine, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(client, scaled_job())
    before = counts(pg)

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("eval insert failed")

    monkeypatch.setattr(job_scale, "insert_eval", boom)
    with pytest.raises(RuntimeError), Session(engine) as session, session.begin():
        job_scale.scale_job(session, "default", "web", job_scale.ScaleRequest(group="g", count=3))
    assert counts(pg) == before
    assert pg.execute("SELECT version FROM jobs WHERE id = 'web'").fetchone() == (0,)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"Count": 6, "Target": {"Group": "g"}}, "Count"),
        ({"Count": 0, "Target": {"Group": "g"}}, "Count"),
        ({"Count": -1, "Target": {"Group": "g"}}, "Count"),
        ({"Count": 3, "Target": {"Group": "nope"}}, "Target.Group"),
        ({"Count": 3}, "Target.Group"),
        ({"Count": "3", "Target": {"Group": "g"}}, "Count"),
        ({"Count": 3, "Error": True, "Target": {"Group": "g"}}, "Count"),
        ({"Target": {"Group": "g"}}, "Count"),
    ],
)
def test_bad_scale_requests_name_the_field_and_write_nothing(
    client: FlaskClient, pg: Conn, body: dict[str, Any], field: str
) -> None:
    register(client, scaled_job())
    before = counts(pg)
    resp = client.post("/v1/job/web/scale", json=body)
    assert resp.status_code == 400, resp.json
    assert field in fields(resp)
    assert counts(pg) == before


def test_scale_of_an_unknown_job_is_404(client: FlaskClient) -> None:
    resp = client.post("/v1/job/ghost/scale", json={"Count": 1, "Target": {"Group": "g"}})
    assert resp.status_code == 404


def test_error_event_records_without_changing_the_job(client: FlaskClient, pg: Conn) -> None:
    register(client, scaled_job())
    before = counts(pg)
    resp = client.post(
        "/v1/job/web/scale",
        json={"Target": {"Group": "g"}, "Error": True, "Message": "autoscaler failed", "Meta": {"k": "v"}},
    )
    assert resp.status_code == 200, resp.json
    assert resp.json is not None and resp.json["EvalID"] == ""
    versions, evals, events, _ = counts(pg)
    assert (versions, evals, events) == (before[0], before[1], 1)
    [event] = json_body(client.get("/v1/job/web/scale"))["TaskGroups"]["g"]["Events"]
    assert event["Error"] is True and event["Count"] is None and event["Meta"] == {"k": "v"}


def test_scaling_events_are_bounded_per_group(client: FlaskClient, pg: Conn) -> None:
    register(client, scaled_job())
    for i in range(23):
        client.post("/v1/job/web/scale", json={"Target": {"Group": "g"}, "Error": True, "Message": str(i)})
    events = json_body(client.get("/v1/job/web/scale"))["TaskGroups"]["g"]["Events"]
    assert len(events) == 20
    assert events[0]["Message"] == "22" and events[-1]["Message"] == "3"


def insert_deployment(pg: Conn, status: str, job_id: str = "web") -> None:
    pg.execute(
        "INSERT INTO deployments (id, namespace, job_id, job_version, job_modify_index, job_spec_modify_index, "
        "job_create_index, status, eval_priority, create_index, modify_index) "
        "SELECT %s, namespace, id, version, job_modify_index, job_modify_index, create_index, %s, 50, "
        "modify_index, modify_index FROM jobs WHERE id = %s",
        (str(uuid.uuid4()), status, job_id),
    )


@pytest.mark.parametrize("status", ["running", "paused", "pending"])
def test_scale_is_refused_during_an_active_deployment(client: FlaskClient, pg: Conn, status: str) -> None:
    register(client, scaled_job())
    insert_deployment(pg, status)
    before = counts(pg)
    resp = client.post("/v1/job/web/scale", json={"Count": 3, "Target": {"Group": "g"}})
    assert resp.status_code == 400
    assert "active deployment" in json_body(resp)["detail"]
    assert counts(pg) == before


def test_scale_goes_ahead_after_the_deployment_finished(client: FlaskClient, pg: Conn) -> None:
    register(client, scaled_job())
    insert_deployment(pg, "successful")
    assert client.post("/v1/job/web/scale", json={"Count": 3, "Target": {"Group": "g"}}).status_code == 200


def test_alloc_stop_marks_migrate_and_creates_alloc_stop_eval(client: FlaskClient, pg: Conn) -> None:
    body = register(client, minimal_job())
    node = insert_node(pg)
    alloc = insert_allocation(pg, node, body["EvalID"])
    resp = client.post(f"/v1/allocation/{alloc}/stop")
    assert resp.status_code == 200, resp.json
    reply = resp.json
    assert reply is not None and set(reply) == {"EvalID", "Index"}
    row = pg.execute(
        "SELECT e.triggered_by, e.status, e.create_index, a.desired_transition, a.modify_index "
        "FROM evaluations e, allocations a WHERE e.id = %s AND a.id = %s",
        (reply["EvalID"], alloc),
    ).fetchone()
    assert row == ("alloc-stop", "pending", reply["Index"], {"Migrate": True}, reply["Index"])


def test_alloc_stop_of_a_terminal_or_unknown_allocation(client: FlaskClient, pg: Conn) -> None:
    body = register(client, minimal_job())
    node = insert_node(pg)
    done = insert_allocation(pg, node, body["EvalID"], client_status="complete")
    before = counts(pg)
    resp = client.post(f"/v1/allocation/{done}/stop")
    assert resp.status_code == 400 and "AllocID" in fields(resp)
    assert client.post(f"/v1/allocation/{uuid.uuid4()}/stop").status_code == 404
    assert client.post("/v1/allocation/not-a-uuid/stop").status_code == 400
    assert counts(pg) == before


def register_versions(client: FlaskClient, n: int) -> None:
    for count in range(1, n + 1):
        job = minimal_job()
        job["TaskGroups"][0]["Count"] = count
        register(client, job)


def test_revert_registers_the_old_spec_as_a_new_version(client: FlaskClient, pg: Conn) -> None:
    register_versions(client, 3)  # versions 0, 1, 2 with counts 1, 2, 3
    resp = client.post("/v1/job/web/revert", json={"JobVersion": 0, "EnforcePriorVersion": 2})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body is not None
    job = client.get("/v1/job/web").json
    assert job is not None and job["Version"] == 3 and job["TaskGroups"][0]["Count"] == 1
    row = pg.execute("SELECT triggered_by, create_index FROM evaluations WHERE id = %s", (body["EvalID"],)).fetchone()
    assert row == ("job-register", body["Index"])
    versions = client.get("/v1/job/web/versions").json
    assert versions is not None and [v["Version"] for v in versions["Versions"]] == [3, 2, 1, 0]


def test_revert_refusals_name_the_field_and_write_nothing(client: FlaskClient, pg: Conn) -> None:
    register_versions(client, 2)
    before = counts(pg)
    resp = client.post("/v1/job/web/revert", json={"JobVersion": 0, "EnforcePriorVersion": 0})
    assert resp.status_code == 409 and fields(resp) == {"EnforcePriorVersion"}
    resp = client.post("/v1/job/web/revert", json={"JobVersion": 1})
    assert resp.status_code == 400 and fields(resp) == {"JobVersion"}
    resp = client.post("/v1/job/web/revert", json={"JobVersion": 9})
    assert resp.status_code == 404 and fields(resp) == {"JobVersion"}
    resp = client.post("/v1/job/web/revert", json={"JobVersion": "0"})
    assert resp.status_code == 400 and fields(resp) == {"JobVersion"}
    assert counts(pg) == before


def test_stable_marks_a_version_and_the_current_job(client: FlaskClient) -> None:
    register_versions(client, 2)
    resp = client.post("/v1/job/web/stable", json={"JobVersion": 1, "Stable": True})
    assert resp.status_code == 200, resp.json
    assert json_body(client.get("/v1/job/web"))["Stable"] is True
    assert client.post("/v1/job/web/stable", json={"JobVersion": 0, "Stable": True}).status_code == 200
    stable = {v["Version"]: v["Stable"] for v in json_body(client.get("/v1/job/web/versions"))["Versions"]}
    assert stable == {1: True, 0: True}
    resp = client.post("/v1/job/web/stable", json={"JobVersion": 7, "Stable": True})
    assert resp.status_code == 404
    resp = client.post("/v1/job/web/stable", json={"JobVersion": 1})
    assert resp.status_code == 400 and fields(resp) == {"Stable"}


def test_versions_are_pruned_to_the_configured_limit_keeping_tagged_ones(database_url: str, pg: Conn) -> None:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, job_max_versions=3), database_url)
    client = app.test_client()
    try:
        register_versions(client, 2)  # versions 0 and 1
        pg.execute("UPDATE job_versions SET version_tag = '{\"Name\": \"keep\"}' WHERE job_id = 'web' AND version = 0")
        job = minimal_job()
        for count in range(3, 8):  # versions 2..6
            job["TaskGroups"][0]["Count"] = count
            register(client, job)
        kept = [r[0] for r in pg.execute("SELECT version FROM job_versions ORDER BY version").fetchall()]
        assert kept == [0, 4, 5, 6]
    finally:
        app.extensions["corral"].close()


def test_default_keeps_six_versions(client: FlaskClient, pg: Conn) -> None:
    register_versions(client, 8)
    kept = [r[0] for r in pg.execute("SELECT version FROM job_versions ORDER BY version").fetchall()]
    assert kept == [2, 3, 4, 5, 6, 7]


def test_scaling_events_go_with_their_job(client: FlaskClient, pg: Conn) -> None:
    register(client, scaled_job())
    client.post("/v1/job/web/scale", json={"Count": 3, "Target": {"Group": "g"}})
    pg.execute("DELETE FROM evaluations")
    pg.execute("DELETE FROM jobs WHERE id = 'web'")
    assert pg.execute("SELECT count(*) FROM job_scaling_events").fetchone() == (0,)
