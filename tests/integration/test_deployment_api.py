"""The deployment routes over HTTP: list, read, allocations, a job's deployments, promote,
pause/resume and fail. No scheduler runs here: deployments and their allocations are inserted
directly, jobs are registered through the API."""

from __future__ import annotations

import threading
import uuid
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
import pytest
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from tests.support.api import json_body, minimal_job, register
from tests.support.fuzz import FUZZ, content_types, query_values, scalars, send, texts
from tests.support.rows import deployed_alloc, group_state, insert_allocation, insert_deployment, insert_node

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]
ZERO_TIME = "0001-01-01T00:00:00Z"
DEPLOYMENT_KEYS = {
    "ID",
    "Namespace",
    "JobID",
    "JobVersion",
    "JobModifyIndex",
    "JobSpecModifyIndex",
    "JobCreateIndex",
    "IsMultiregion",
    "TaskGroups",
    "Status",
    "StatusDescription",
    "EvalPriority",
    "CreateIndex",
    "ModifyIndex",
    "CreateTime",
    "ModifyTime",
}
GROUP_KEYS = {
    "AutoRevert",
    "AutoPromote",
    "ProgressDeadline",
    "RequireProgressBy",
    "Promoted",
    "PlacedCanaries",
    "DesiredCanaries",
    "DesiredTotal",
    "PlacedAllocs",
    "HealthyAllocs",
    "UnhealthyAllocs",
}
UPDATE_KEYS = {"EvalID", "EvalCreateIndex", "DeploymentModifyIndex", "RevertedJobVersion", "Index"}


def body_of(resp: Any) -> Any:
    assert resp.status_code == 200, resp.json
    return resp.json


def error_fields(resp: Any) -> set[str]:
    assert resp.content_type == "application/problem+json"
    return {e["field"] for e in resp.json["errors"]}


def eval_row(pg: Conn, eval_id: str) -> tuple[object, ...]:
    row = pg.execute(
        "SELECT triggered_by, status, deployment_id::text, job_id, create_index FROM evaluations WHERE id = %s",
        (eval_id,),
    ).fetchone()
    assert row is not None, f"no evaluation {eval_id}"
    return row


def deployment_row(pg: Conn, deployment_id: str) -> tuple[object, ...]:
    row = pg.execute(
        "SELECT status, status_description, modify_index FROM deployments WHERE id = %s", (deployment_id,)
    ).fetchone()
    assert row is not None, f"no deployment {deployment_id}"
    return row


def counts(pg: Conn) -> tuple[object, ...] | None:
    return pg.execute(
        "SELECT (SELECT count(*) FROM evaluations), (SELECT count(*) FROM job_versions), "
        "(SELECT max(value) FROM state_index), "
        "(SELECT string_agg(status || task_groups::text, ',' ORDER BY id) FROM deployments)"
    ).fetchone()


# --- reads -------------------------------------------------------------------------------


def test_read_has_nomads_shape_with_counts_from_the_allocations(client: FlaskClient, pg: Conn) -> None:
    job = minimal_job()
    job["TaskGroups"].append({"Name": "h", "Count": 1, "Tasks": [{"Name": "t", "Driver": "mock"}]})
    reg = register(client, job)
    groups = {
        "g": group_state(DesiredCanaries=2, DesiredTotal=3, AutoRevert=True, ProgressDeadline=600_000_000_000),
        "h": group_state(DesiredTotal=1, RequireProgressBy=1_700_000_000_123_456_789, AutoPromote=True),
    }
    dep = insert_deployment(pg, groups=groups)
    node = insert_node(pg)
    healthy_canary = deployed_alloc(pg, node, reg["EvalID"], dep, healthy=True, canary=True)
    unhealthy_canary = deployed_alloc(pg, node, reg["EvalID"], dep, healthy=False, canary=True)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=None)
    insert_allocation(pg, node, reg["EvalID"])  # not part of the deployment

    body = body_of(client.get(f"/v1/deployment/{dep}"))
    assert set(body) == DEPLOYMENT_KEYS
    job_row = body_of(client.get("/v1/job/web"))
    assert (body["ID"], body["Namespace"], body["JobID"], body["JobVersion"]) == (dep, "default", "web", 0)
    assert body["JobCreateIndex"] == job_row["CreateIndex"]
    assert body["JobModifyIndex"] == body["JobSpecModifyIndex"] == job_row["JobModifyIndex"]
    assert (body["Status"], body["StatusDescription"], body["IsMultiregion"]) == (
        "running",
        "Deployment is running",
        False,
    )
    assert (body["EvalPriority"], body["CreateIndex"], body["ModifyIndex"]) == (50, 100, 100)
    assert isinstance(body["CreateTime"], int) and body["CreateTime"] > 1_600_000_000 * 10**9
    assert body["ModifyTime"] >= body["CreateTime"]
    g, h = body["TaskGroups"]["g"], body["TaskGroups"]["h"]
    assert set(g) == set(h) == GROUP_KEYS
    assert g == {
        "AutoRevert": True,
        "AutoPromote": False,
        "ProgressDeadline": 600_000_000_000,
        "RequireProgressBy": ZERO_TIME,
        "Promoted": False,
        "PlacedCanaries": sorted([healthy_canary, unhealthy_canary]),
        "DesiredCanaries": 2,
        "DesiredTotal": 3,
        "PlacedAllocs": 3,
        "HealthyAllocs": 1,
        "UnhealthyAllocs": 1,
    }
    assert h["RequireProgressBy"] == "2023-11-14T22:13:20.123456789Z"
    assert (h["AutoPromote"], h["PlacedCanaries"], h["PlacedAllocs"], h["HealthyAllocs"]) == (True, [], 0, 0)


def test_require_progress_by_drops_trailing_zeros_like_go(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    whole = insert_deployment(pg, groups={"g": group_state(RequireProgressBy=1_700_000_000_000_000_000)})
    millis = insert_deployment(pg, groups={"g": group_state(RequireProgressBy=1_700_000_000_250_000_000)})
    assert body_of(client.get(f"/v1/deployment/{whole}"))["TaskGroups"]["g"]["RequireProgressBy"] == (
        "2023-11-14T22:13:20Z"
    )
    assert body_of(client.get(f"/v1/deployment/{millis}"))["TaskGroups"]["g"]["RequireProgressBy"] == (
        "2023-11-14T22:13:20.25Z"
    )


def test_read_unknown_is_404_and_a_malformed_id_is_400(client: FlaskClient) -> None:
    missing = client.get(f"/v1/deployment/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert error_fields(missing) == {"DeploymentID"}
    malformed = client.get("/v1/deployment/not-a-uuid")
    assert malformed.status_code == 400
    assert error_fields(malformed) == {"DeploymentID"}


def test_list_is_oldest_first_with_reverse_namespace_and_prefix(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    register(client, minimal_job("api"))
    old = insert_deployment(pg, create_index=100, status="successful")
    new = insert_deployment(pg, create_index=200)
    other = insert_deployment(pg, job_id="api", create_index=150)

    listed = body_of(client.get("/v1/deployments"))
    assert [d["ID"] for d in listed] == [old, other, new]  # Nomad's order: CreateIndex, then ID
    assert all(set(d) == DEPLOYMENT_KEYS for d in listed)
    assert [d["ID"] for d in body_of(client.get("/v1/deployments?ascending=true"))] == [old, other, new]
    assert [d["ID"] for d in body_of(client.get("/v1/deployments?reverse=true"))] == [new, other, old]
    assert [d["ID"] for d in body_of(client.get("/v1/deployments?namespace=*&reverse=true"))] == [new, other, old]
    assert body_of(client.get("/v1/deployments?namespace=elsewhere")) == []
    assert [d["ID"] for d in body_of(client.get(f"/v1/deployments?prefix={new[:6]}"))] == [new]
    assert [d["ID"] for d in body_of(client.get(f"/v1/deployments?prefix={new[:6].upper()}"))] == [new]
    assert error_fields(client.get("/v1/deployments?prefix=zz%25")) == {"prefix"}
    assert [d["ID"] for d in body_of(client.get("/v1/deployments?filter=Status%20==%20%22running%22"))] == [other, new]
    assert error_fields(client.get("/v1/deployments?filter=Status%20=%20%22running%22")) == {"filter"}


def test_list_covers_other_namespaces_only_with_a_wildcard(client: FlaskClient, pg: Conn) -> None:
    pg.execute("INSERT INTO namespaces (name, create_index, modify_index) VALUES ('team', 1, 1)")
    register(client, minimal_job("api", Namespace="team"))
    register(client, minimal_job())
    team = insert_deployment(pg, job_id="api", create_index=300)
    default = insert_deployment(pg, create_index=200)
    assert [d["ID"] for d in body_of(client.get("/v1/deployments"))] == [default]
    assert [d["ID"] for d in body_of(client.get("/v1/deployments?namespace=team"))] == [team]
    listed = body_of(client.get("/v1/deployments?namespace=*"))
    assert [(d["ID"], d["Namespace"]) for d in listed] == [(default, "default"), (team, "team")]


def test_deployment_allocations_are_allocation_stubs(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job())
    dep = insert_deployment(pg)
    node = insert_node(pg)
    first = deployed_alloc(pg, node, reg["EvalID"], dep, healthy=True, canary=True)
    second = deployed_alloc(pg, node, reg["EvalID"], dep)
    insert_allocation(pg, node, reg["EvalID"])
    # Indexes are transaction IDs, cluster-wide: "later" is relative to what this run has reached.
    pg.execute(
        "UPDATE allocations SET create_index = (SELECT max(create_index) + 1000 FROM allocations) WHERE id = %s",
        (second,),
    )
    allocs = body_of(client.get(f"/v1/deployment/allocations/{dep}"))
    assert [a["ID"] for a in allocs] == [first, second]
    assert allocs[0]["DeploymentID"] == dep
    assert allocs[0]["DeploymentStatus"]["Healthy"] is True and allocs[0]["DeploymentStatus"]["Canary"] is True
    assert "Job" not in allocs[0]
    assert body_of(client.get(f"/v1/deployment/allocations/{uuid.uuid4()}")) == []
    assert error_fields(client.get("/v1/deployment/allocations/nope")) == {"DeploymentID"}


def test_job_deployments_and_latest_deployment(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    assert body_of(client.get("/v1/job/web/deployments")) == []
    latest = client.get("/v1/job/web/deployment")
    assert latest.status_code == 200 and latest.get_data(as_text=True).strip() == "null"
    assert body_of(client.get("/v1/job/missing/deployment")) is None
    assert body_of(client.get("/v1/job/missing/deployments")) == []

    first = insert_deployment(pg, create_index=100, status="successful")
    second = insert_deployment(pg, create_index=200)
    # A deployment of an earlier job that had the same ID (another JobCreateIndex).
    stale = insert_deployment(pg, create_index=50, status="cancelled")
    pg.execute("UPDATE deployments SET job_create_index = 1 WHERE id = %s", (stale,))
    assert [d["ID"] for d in body_of(client.get("/v1/job/web/deployments"))] == [second, first]
    assert [d["ID"] for d in body_of(client.get("/v1/job/web/deployments?all=true"))] == [second, first, stale]
    one = body_of(client.get("/v1/job/web/deployment"))
    assert one["ID"] == second and set(one) == DEPLOYMENT_KEYS
    assert "TaskGroups" in one and one["TaskGroups"]["g"]["PlacedAllocs"] == 0


def test_job_with_slashes_in_its_id_has_deployment_routes(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("batch/child"))
    dep = insert_deployment(pg, job_id="batch/child")
    assert [d["ID"] for d in body_of(client.get("/v1/job/batch/child/deployments"))] == [dep]
    assert body_of(client.get("/v1/job/batch/child/deployment"))["ID"] == dep
    assert body_of(client.get("/v1/job/batch/child"))["ID"] == "batch/child"


def test_reads_block_until_the_deployment_changes(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    first = client.get(f"/v1/deployment/{dep}")
    index = int(first.headers["X-Nomad-Index"])
    result: dict[str, Any] = {}
    started = threading.Event()

    def block() -> None:
        started.set()
        # A wait far beyond the test timeout: only the write can end this request.
        resp = client.get(f"/v1/deployment/{dep}?index={index}&wait=290s")
        result["index"] = int(resp.headers["X-Nomad-Index"])
        result["status"] = json_body(resp)["Status"]

    waiter = threading.Thread(target=block)
    waiter.start()
    started.wait()
    paused = body_of(client.post(f"/v1/deployment/pause/{dep}", json={"DeploymentID": dep, "Pause": True}))
    waiter.join(timeout=60)
    assert not waiter.is_alive()
    assert result == {"index": paused["Index"], "status": "paused"}
    assert paused["Index"] > index


@pytest.mark.parametrize(
    "path", ["/v1/deployments", "/v1/job/web/deployments", "/v1/job/web/deployment", "/v1/deployment/allocations/{id}"]
)
def test_every_read_carries_the_deployment_index(client: FlaskClient, pg: Conn, path: str) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    change = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    resp = client.get(path.format(id=dep))
    assert resp.status_code == 200
    assert int(resp.headers["X-Nomad-Index"]) == change["Index"]


# --- promote -----------------------------------------------------------------------------


def canary_setup(client: FlaskClient, pg: Conn, *, healthy: list[bool | None]) -> tuple[str, list[str]]:
    reg = register(client, minimal_job())
    dep = insert_deployment(pg, groups={"g": group_state(DesiredCanaries=len(healthy), DesiredTotal=2)})
    node = insert_node(pg)
    allocs = [deployed_alloc(pg, node, reg["EvalID"], dep, healthy=h, canary=True) for h in healthy]
    return dep, allocs


def test_promote_all_marks_groups_promoted_and_creates_a_watcher_eval(client: FlaskClient, pg: Conn) -> None:
    dep, _ = canary_setup(client, pg, healthy=[True, True])
    resp = body_of(client.post(f"/v1/deployment/promote/{dep}", json={"DeploymentID": dep, "All": True}))
    assert set(resp) == UPDATE_KEYS
    assert resp["RevertedJobVersion"] is None
    assert resp["EvalCreateIndex"] == resp["DeploymentModifyIndex"] == resp["Index"]
    assert eval_row(pg, resp["EvalID"]) == ("deployment-watcher", "pending", dep, "web", resp["Index"])
    body = body_of(client.get(f"/v1/deployment/{dep}"))
    assert body["TaskGroups"]["g"]["Promoted"] is True
    assert (body["Status"], body["ModifyIndex"]) == ("running", resp["Index"])


def test_promote_named_groups_with_put_and_without_deployment_id(client: FlaskClient, pg: Conn) -> None:
    dep, _ = canary_setup(client, pg, healthy=[True])
    resp = body_of(client.put(f"/v1/deployment/promote/{dep}", json={"Groups": ["g", "g"]}))
    assert resp["EvalID"]
    assert body_of(client.get(f"/v1/deployment/{dep}"))["TaskGroups"]["g"]["Promoted"] is True


@pytest.mark.parametrize("health", [[True, False], [True, None]])
def test_promote_with_canaries_not_all_healthy_is_409_naming_groups(
    client: FlaskClient, pg: Conn, health: list[bool | None]
) -> None:
    dep, _ = canary_setup(client, pg, healthy=health)
    before = counts(pg)
    resp = client.post(f"/v1/deployment/promote/{dep}", json={"DeploymentID": dep, "All": True})
    assert resp.status_code == 409
    assert error_fields(resp) == {"Groups"}
    assert "1/2 healthy" in json_body(resp)["detail"]
    assert counts(pg) == before


@pytest.mark.parametrize("status", ["successful", "failed", "cancelled"])
def test_promote_of_a_finished_deployment_is_409(client: FlaskClient, pg: Conn, status: str) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg, status=status, groups={"g": group_state(DesiredCanaries=1)})
    before = counts(pg)
    resp = client.post(f"/v1/deployment/promote/{dep}", json={"All": True})
    assert resp.status_code == 409
    assert error_fields(resp) == {"DeploymentID"}
    assert counts(pg) == before


def test_promote_of_a_paused_deployment_is_409(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg, status="paused", groups={"g": group_state(DesiredCanaries=1)})
    resp = client.post(f"/v1/deployment/promote/{dep}", json={"All": True})
    assert resp.status_code == 409 and error_fields(resp) == {"DeploymentID"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "Groups"),
        ({"All": False}, "Groups"),
        ({"Groups": []}, "Groups"),
        ({"Groups": None}, "Groups"),
        ({"Groups": [""]}, "Groups"),
        ({"Groups": "g"}, "Groups"),
        ({"Groups": ["g", 3]}, "Groups[1]"),
        ({"All": "yes"}, "All"),
        ({"All": 1}, "All"),
        ({"Groups": ["nope"]}, "Groups"),
        ({"All": True, "DeploymentID": "not-this-one"}, "DeploymentID"),
        ({"All": True, "DeploymentID": str(uuid.UUID(int=7))}, "DeploymentID"),
        ({"All": True, "DeploymentID": 5}, "DeploymentID"),
    ],
)
def test_promote_bad_bodies_are_400_naming_the_field(
    client: FlaskClient, pg: Conn, body: dict[str, Any], field: str
) -> None:
    dep, _ = canary_setup(client, pg, healthy=[True])
    before = counts(pg)
    resp = client.post(f"/v1/deployment/promote/{dep}", json=body)
    assert resp.status_code == 400, resp.json
    assert field in error_fields(resp)
    assert counts(pg) == before


def test_promote_without_canaries_is_400(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    resp = client.post(f"/v1/deployment/promote/{dep}", json={"All": True})
    assert resp.status_code == 400 and error_fields(resp) == {"Groups"}


def test_promote_body_must_be_a_json_object(client: FlaskClient, pg: Conn) -> None:
    dep, _ = canary_setup(client, pg, healthy=[True])
    assert error_fields(client.post(f"/v1/deployment/promote/{dep}", data="[]")) == {"body"}
    assert error_fields(client.post(f"/v1/deployment/promote/{dep}", data="{")) == {"body"}
    assert error_fields(client.post(f"/v1/deployment/promote/{dep}")) == {"body"}


def test_writes_on_unknown_deployments_are_404(client: FlaskClient) -> None:
    missing = str(uuid.uuid4())
    for path, body in [
        ("promote", {"All": True}),
        ("pause", {"Pause": True}),
        ("fail", None),
    ]:
        resp = client.post(f"/v1/deployment/{path}/{missing}", json=body)
        assert resp.status_code == 404, path
        assert error_fields(resp) == {"DeploymentID"}
    assert client.get(f"/v1/deployment/promote/{missing}").status_code == 405


# --- pause and resume --------------------------------------------------------------------


def test_pause_then_resume_creates_a_deployment_watcher_eval(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    evals_before = pg.execute("SELECT count(*) FROM evaluations").fetchone()

    paused = body_of(client.post(f"/v1/deployment/pause/{dep}", json={"DeploymentID": dep, "Pause": True}))
    assert set(paused) == UPDATE_KEYS
    assert (paused["EvalID"], paused["EvalCreateIndex"], paused["RevertedJobVersion"]) == ("", 0, None)
    assert paused["DeploymentModifyIndex"] == paused["Index"]
    assert deployment_row(pg, dep) == ("paused", "Deployment is paused", paused["Index"])
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == evals_before

    resumed = body_of(client.put(f"/v1/deployment/pause/{dep}", json={"DeploymentID": dep, "Pause": False}))
    assert resumed["Index"] > paused["Index"]
    assert deployment_row(pg, dep) == ("running", "Deployment is running", resumed["Index"])
    assert eval_row(pg, resumed["EvalID"]) == ("deployment-watcher", "pending", dep, "web", resumed["Index"])
    assert resumed["EvalCreateIndex"] == resumed["Index"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "Pause"),
        ({"DeploymentID": "x"}, "Pause"),
        ({"Pause": "true"}, "Pause"),
        ({"Pause": 0}, "Pause"),
        ({"Pause": True, "DeploymentID": str(uuid.UUID(int=1))}, "DeploymentID"),
    ],
)
def test_pause_bad_bodies_are_400(client: FlaskClient, pg: Conn, body: dict[str, Any], field: str) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    before = counts(pg)
    resp = client.post(f"/v1/deployment/pause/{dep}", json=body)
    assert resp.status_code == 400
    assert field in error_fields(resp)
    assert counts(pg) == before


def test_pause_of_a_finished_deployment_is_409(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg, status="successful")
    resp = client.post(f"/v1/deployment/pause/{dep}", json={"DeploymentID": dep, "Pause": True})
    assert resp.status_code == 409 and error_fields(resp) == {"DeploymentID"}


# --- fail --------------------------------------------------------------------------------


def test_fail_marks_failed_with_a_watcher_eval(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    resp = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    assert set(resp) == UPDATE_KEYS and resp["RevertedJobVersion"] is None
    assert deployment_row(pg, dep) == ("failed", "Deployment marked as failed", resp["Index"])
    assert eval_row(pg, resp["EvalID"]) == ("deployment-watcher", "pending", dep, "web", resp["Index"])
    again = client.put(f"/v1/deployment/fail/{dep}", json={"DeploymentID": dep})
    assert again.status_code == 409 and error_fields(again) == {"DeploymentID"}


def test_fail_with_auto_revert_registers_the_stable_version_again(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    assert client.post("/v1/job/web/stable", json={"JobVersion": 0, "Stable": True}).status_code == 200
    changed = minimal_job()
    changed["TaskGroups"][0]["Count"] = 5
    register(client, changed)
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True, DesiredTotal=5)})

    resp = body_of(client.post(f"/v1/deployment/fail/{dep}", json={"DeploymentID": dep}))
    assert resp["RevertedJobVersion"] == 0
    assert resp["EvalID"] and resp["EvalCreateIndex"] == resp["Index"]
    status, description, _ = deployment_row(pg, dep)
    assert status == "failed"
    assert description == "Deployment marked as failed - rolling back to job version 0"
    job = body_of(client.get("/v1/job/web"))
    assert (job["Version"], job["TaskGroups"][0]["Count"]) == (2, 2)
    assert eval_row(pg, resp["EvalID"])[:2] == ("job-register", "pending")


def test_fail_with_auto_revert_and_no_stable_version_says_so(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True)})
    resp = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    assert resp["RevertedJobVersion"] is None
    assert deployment_row(pg, dep)[1] == ("Deployment marked as failed - no stable job version to auto revert to")
    assert body_of(client.get("/v1/job/web"))["Version"] == 0


@pytest.mark.parametrize(
    ("data", "field"),
    [('{"DeploymentID": "other"}', "DeploymentID"), ("[1]", "body"), ('{"DeploymentID": 3}', "DeploymentID")],
)
def test_fail_checks_a_body_when_one_is_given(client: FlaskClient, pg: Conn, data: str, field: str) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    resp = client.post(f"/v1/deployment/fail/{dep}", data=data)
    assert resp.status_code == 400 and field in error_fields(resp)
    assert deployment_row(pg, dep)[0] == "running"


# --- hostile input -----------------------------------------------------------------------

BODY_KEYS = st.sampled_from(["DeploymentID", "All", "Groups", "Pause", "Region"]) | texts
deployment_bodies = st.recursive(
    scalars | st.sampled_from(["g", "h", str(uuid.UUID(int=9))]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(BODY_KEYS, children, max_size=5),
    max_leaves=20,
)


@FUZZ
@given(body=deployment_bodies, content_type=content_types)
def test_arbitrary_write_bodies_never_5xx(client: FlaskClient, pg: Conn, body: Any, content_type: str | None) -> None:
    if not pg.execute("SELECT 1 FROM jobs").fetchone():
        register(client, minimal_job())
    dep = insert_deployment(pg, groups={"g": group_state(DesiredCanaries=1)})
    for action in ("promote", "pause", "fail"):
        send(client, "POST", f"/v1/deployment/{action}/{dep}", body, content_type)


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(["prefix", "namespace", "ascending", "all", "filter"]) | texts, query_values
    ),
    ident=texts | st.uuids().map(str),
)
def test_arbitrary_queries_and_ids_never_5xx(client: FlaskClient, params: dict[str, str], ident: str) -> None:
    query, quoted = urlencode(params), quote(ident, safe="")
    for url in (
        f"/v1/deployments?{query}",
        f"/v1/deployment/{quoted}?{query}",
        f"/v1/deployment/allocations/{quoted}?{query}",
        f"/v1/job/{quoted}/deployments?{query}",
        f"/v1/job/{quoted}/deployment?{query}",
    ):
        resp = client.get(url)
        # (an empty ID gives '//', which the router answers with a redirect)
        assert resp.status_code < 500, (url, resp.json)


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/v1/deployment/a%00b", "DeploymentID"),
        ("/v1/deployment/allocations/a%00b", "DeploymentID"),
        ("/v1/deployments?prefix=%00", "prefix"),
        ("/v1/deployments?namespace=a%00b", "namespace"),
        ("/v1/job/web/deployments?namespace=*", "namespace"),
        ("/v1/job/web/deployments?all=maybe", "all"),
        ("/v1/deployments?ascending=maybe", "ascending"),
        ("/v1/deployments?index=-1", "index"),
    ],
)
def test_bad_query_values_are_400_naming_them(client: FlaskClient, url: str, field: str) -> None:
    resp = client.get(url)
    assert resp.status_code == 400
    assert error_fields(resp) == {field}


def test_auto_revert_never_undoes_a_newer_version_or_a_stop(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    assert client.post("/v1/job/web/stable", json={"JobVersion": 0, "Stable": True}).status_code == 200
    changed = minimal_job()
    changed["TaskGroups"][0]["Count"] = 5
    register(client, changed)
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True, DesiredTotal=5)})
    assert client.delete("/v1/job/web").status_code == 200  # stopped: a new version with Stop
    resp = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    assert resp["RevertedJobVersion"] is None
    assert deployment_row(pg, dep)[1] == "Deployment marked as failed"
    job = body_of(client.get("/v1/job/web"))
    assert job["Stop"] is True and job["Version"] == 2


def test_a_revert_the_registration_checks_refuse_still_fails_the_deployment(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    assert client.post("/v1/job/web/stable", json={"JobVersion": 0, "Stable": True}).status_code == 200
    changed = minimal_job()
    changed["TaskGroups"][0]["Count"] = 5
    register(client, changed)
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True, DesiredTotal=5)})
    pg.execute("UPDATE scheduler_config SET reject_job_registration = true")
    resp = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    assert resp["RevertedJobVersion"] is None and resp["EvalID"]
    status, description, _ = deployment_row(pg, dep)
    assert status == "failed"
    assert str(description).startswith("Deployment marked as failed - auto revert to job version 0 failed:")
    assert body_of(client.get("/v1/job/web"))["Version"] == 1


def test_revert_only_to_the_newest_stable_version_and_not_to_the_same_spec(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    changed = minimal_job()
    changed["TaskGroups"][0]["Count"] = 5
    register(client, changed)
    register(client, minimal_job())  # version 2: the same spec as version 0
    for version in (0, 1):
        assert client.post("/v1/job/web/stable", json={"JobVersion": version, "Stable": True}).status_code == 200
    register(client, changed)  # version 3, deployed and failing; the newest stable other than it is 1
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True, DesiredTotal=5)})
    resp = body_of(client.post(f"/v1/deployment/fail/{dep}"))
    assert resp["RevertedJobVersion"] is None
    assert deployment_row(pg, dep)[1] == (
        "Deployment marked as failed - not rolling back to stable job version 1 as current job has same specification"
    )


def test_allocation_health_by_hand(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job())
    dep = insert_deployment(pg)
    node = insert_node(pg)
    good, bad = (deployed_alloc(pg, node, reg["EvalID"], dep) for _ in range(2))
    stranger = insert_allocation(pg, node, reg["EvalID"])
    resp = body_of(
        client.post(
            f"/v1/deployment/allocation-health/{dep}",
            json={"DeploymentID": dep, "HealthyAllocationIDs": [good], "UnhealthyAllocationIDs": [bad]},
        )
    )
    assert eval_row(pg, resp["EvalID"])[:2] == ("deployment-watcher", "pending")
    body = body_of(client.get(f"/v1/deployment/{dep}"))
    assert (body["TaskGroups"]["g"]["HealthyAllocs"], body["TaskGroups"]["g"]["UnhealthyAllocs"]) == (1, 1)
    before = counts(pg)
    refused = client.post(f"/v1/deployment/allocation-health/{dep}", json={"HealthyAllocationIDs": [stranger]})
    assert refused.status_code == 400 and error_fields(refused) == {"HealthyAllocationIDs"}
    assert counts(pg) == before
    both = client.post(
        f"/v1/deployment/allocation-health/{dep}",
        json={"HealthyAllocationIDs": [good], "UnhealthyAllocationIDs": [good]},
    )
    assert both.status_code == 400 and error_fields(both) == {"UnhealthyAllocationIDs"}
    empty = client.post(f"/v1/deployment/allocation-health/{dep}", json={})
    assert empty.status_code == 400 and error_fields(empty) == {"HealthyAllocationIDs"}


def test_psql_view_shows_each_group_with_counts_from_the_allocations(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job())
    dep = insert_deployment(
        pg, groups={"g": group_state(DesiredCanaries=1, RequireProgressBy=1_800_000_000_000_000_000)}
    )
    node = insert_node(pg)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=True, canary=True)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=False)
    deployed_alloc(pg, node, reg["EvalID"], dep)
    row = pg.execute(
        "SELECT job_id, status, task_group, desired, canaries, promoted, placed, healthy, unhealthy, "
        "extract(epoch FROM require_progress_by)::bigint FROM v_deployments WHERE id = %s",
        (dep,),
    ).fetchone()
    assert row == ("web", "running", "g", 2, 1, False, 3, 1, 1, 1_800_000_000)
