"""POST /v1/job/:id/plan: Nomad's plan response, nothing written, preemptions shown, bad input named."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def add_node(pg: Conn, cpu: int = 1000, memory: int = 1024) -> str:
    node_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
        "status_updated_at, scheduling_eligibility, drivers, cpu_shares, memory_mb, disk_mb, create_index, "
        "modify_index) VALUES (%s, 'x', 'n1', 'dc1', 'default', 'v1:1', 'ready', now(), 'eligible', "
        '\'{"mock": {"Healthy": true}}\', %s, %s, 10000, 1, 1)',
        (node_id, cpu, memory),
    )
    return node_id


def job(job_id: str, priority: int, cpu: int, count: int = 1) -> dict[str, Any]:
    body = minimal_job(job_id, Priority=priority, Datacenters=["dc1"])
    body["TaskGroups"][0]["Count"] = count
    body["TaskGroups"][0]["Tasks"][0]["Resources"] = {"CPU": cpu, "MemoryMB": 64}
    return body


def written(pg: Conn) -> tuple[object, ...]:
    row = pg.execute(
        "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM evaluations), (SELECT count(*) FROM allocations), "
        "(SELECT max(value) FROM state_index)"
    ).fetchone()
    assert row is not None
    return row


def test_plan_of_a_new_job_places_and_writes_nothing(client: FlaskClient, pg: Conn) -> None:
    add_node(pg)
    before = written(pg)
    resp = client.post("/v1/job/web/plan", json={"Job": job("web", 50, 100, count=2), "Diff": True})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body is not None and resp.headers["X-Nomad-Index"]
    assert body["Annotations"]["DesiredTGUpdates"]["g"]["Place"] == 2
    assert body["Annotations"]["PreemptedAllocs"] is None
    assert body["FailedTGAllocs"] is None and body["JobModifyIndex"] == 0
    assert body["Diff"]["Type"] == "Added" and body["Diff"]["TaskGroups"][0]["Name"] == "g"
    assert written(pg) == before


def test_plan_of_the_registered_job_changes_nothing(client: FlaskClient, pg: Conn) -> None:
    add_node(pg)
    spec = job("web", 50, 100)
    registered = client.post("/v1/jobs", json={"Job": spec})
    assert registered.status_code == 200
    resp = client.post("/v1/job/web/plan", json={"Job": spec, "Diff": True})
    body = resp.json
    assert body is not None
    assert body["Diff"]["Type"] == "None"
    # Nomad lists the unchanged group and task, and annotates the group with its counts.
    [group] = body["Diff"]["TaskGroups"]
    assert (group["Type"], group["Name"], group["Updates"]) == ("None", "g", {"create": 1})  # nothing runs yet
    assert [(t["Type"], t["Annotations"]) for t in group["Tasks"]] == [("None", None)]
    assert body["JobModifyIndex"] == json_body(registered)["JobModifyIndex"]
    edited = client.post("/v1/job/web/plan", json={"Job": job("web", 60, 100), "Diff": True}).json
    assert edited is not None and edited["Diff"]["Type"] == "Edited"
    assert {"Type": "Edited", "Name": "Priority", "Old": "50", "New": "60", "Annotations": None} in edited["Diff"][
        "Fields"
    ]


def test_plan_shows_the_allocations_it_would_preempt(client: FlaskClient, pg: Conn) -> None:
    node = add_node(pg)
    assert client.post("/v1/jobs", json={"Job": job("low", 20, 1000)}).status_code == 200
    eval_id = pg.execute("SELECT id FROM evaluations WHERE job_id = 'low'").fetchone()
    assert eval_id is not None
    victim = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, name, "
        "desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, modify_index, "
        "alloc_modify_index) VALUES (%s, 'default', 'low', 0, %s, %s, 'n1', 'g', 'low.g[0]', 'run', 'running', "
        "1000, 64, 64, 0, 5, 5, 5)",
        (victim, eval_id[0], node),
    )
    high = job("high", 80, 500)
    blocked = client.post("/v1/job/high/plan", json={"Job": high}).json
    assert blocked is not None and blocked["FailedTGAllocs"]["g"]["DimensionExhausted"] == {"cpu": 1}
    config = json_body(client.get("/v1/operator/scheduler/configuration"))["SchedulerConfig"]
    config["PreemptionConfig"]["ServiceSchedulerEnabled"] = True
    assert client.put("/v1/operator/scheduler/configuration", json=config).status_code == 200

    body = client.post("/v1/job/high/plan", json={"Job": high}).json
    assert body is not None and body["FailedTGAllocs"] is None
    [stub] = body["Annotations"]["PreemptedAllocs"]
    assert (stub["ID"], stub["JobID"], stub["TaskGroup"]) == (victim, "low", "g")
    assert body["Annotations"]["DesiredTGUpdates"]["g"]["Preemptions"] == 1
    assert pg.execute("SELECT desired_status FROM allocations WHERE id = %s", (victim,)).fetchone() == ("run",)


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/v1/job/web/plan", {"Job": minimal_job("web"), "Diff": "yes"}, "Diff"),
        ("/v1/job/other/plan", {"Job": minimal_job("web")}, "Job.ID"),
        ("/v1/job/web/plan", {}, "Job"),
        ("/v1/job/web/plan", {"Job": minimal_job("web", Priority=500)}, "Job.Priority"),
        ("/v1/job/web/plan", {"Job": minimal_job("web", Namespace="nope")}, "Job.Namespace"),
    ],
)
def test_bad_plan_input_is_400(client: FlaskClient, url: str, body: dict[str, Any], field: str) -> None:
    resp = client.post(url, json=body)
    assert resp.status_code == 400, resp.json
    assert field in {e["field"] for e in json_body(resp)["errors"]}


def test_plan_of_a_periodic_parent_places_nothing(client: FlaskClient, pg: Conn) -> None:
    add_node(pg)
    spec = job("nightly", 50, 100) | {"Type": "batch", "Periodic": {"Enabled": True, "Spec": "0 3 * * *"}}
    body = client.post("/v1/job/nightly/plan", json={"Job": spec}).json
    assert body is not None and body["FailedTGAllocs"] is None
    assert set(body["Annotations"]["DesiredTGUpdates"]["g"].values()) == {0}


def resources_fields(diff: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    [task] = diff["TaskGroups"][0]["Tasks"]
    [resources] = [o for o in task["Objects"] if o["Name"] == "Resources"]
    return [(f["Type"], f["Name"], f["Old"], f["New"]) for f in resources["Fields"]]


def test_the_plan_diff_is_contextual(client: FlaskClient, pg: Conn) -> None:
    """As Nomad's Job.Plan: the edited Resources block lists its unchanged MemoryMB too."""
    add_node(pg)
    assert client.put("/v1/jobs", json={"Job": job("web", 50, 100)}).status_code == 200
    resp = client.post("/v1/job/web/plan", json={"Job": job("web", 50, 200), "Diff": True})
    assert resp.status_code == 200, resp.json
    fields = resources_fields(json_body(resp)["Diff"])
    assert ("Edited", "CPU", "100", "200") in fields and ("None", "MemoryMB", "64", "64") in fields
    assert all(kind in ("Edited", "None") for kind, *_ in fields)
