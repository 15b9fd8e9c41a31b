"""GET|POST /v1/jobs/statuses: Nomad 1.8's Job.Statuses shape, order, paging, children and the
POST body's job list."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_deployment, insert_node

pytestmark = pytest.mark.integration
KEYS = {
    *("ID", "Namespace", "Name", "Type", "NodePool", "Datacenters", "Priority", "Version", "SubmitTime"),
    *("ModifyIndex", "Allocs", "GroupCountSum", "ChildStatuses", "ParentID", "LatestDeployment", "Stop"),
    *("IsPack", "Status"),
}


def statuses(client: FlaskClient, query: str = "", **kwargs: Any) -> list[dict[str, Any]]:
    resp = client.open(f"/v1/jobs/statuses{query}", method="POST" if "json" in kwargs else "GET", **kwargs)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body: list[dict[str, Any]] = resp.json  # type: ignore[assignment]
    return body


def test_each_job_with_its_allocations_and_latest_deployment(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web", Meta={"pack.name": "web"}))
    register(client, minimal_job("api"))
    node = insert_node(pg)
    eval_id = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web'").fetchone()[0]  # type: ignore[index]
    alloc = insert_allocation(pg, node, str(eval_id), job_id="web")
    deployment = insert_deployment(pg)
    pg.commit()
    found = statuses(client)
    assert [j["ID"] for j in found] == ["api", "web"] or [j["ID"] for j in found] == ["web", "api"]
    web = next(j for j in found if j["ID"] == "web")
    assert set(web) == KEYS
    assert (web["GroupCountSum"], web["IsPack"], web["Stop"], web["ParentID"], web["ChildStatuses"]) == (
        2,
        True,
        False,
        "",
        None,
    )
    assert web["Allocs"] == [
        {
            "ID": alloc,
            "Group": "g",
            "ClientStatus": "running",
            "NodeID": node,
            "DeploymentStatus": {"Canary": False, "Healthy": None},
            "JobVersion": 0,
            "FollowupEvalID": "",
            "HasPausedTask": False,
        }
    ]
    assert web["LatestDeployment"]["ID"] == deployment and web["LatestDeployment"]["IsActive"] is True
    api = next(j for j in found if j["ID"] == "api")
    assert api["Allocs"] is None and api["LatestDeployment"] is None


def test_newest_change_first_paged_by_modify_index(client: FlaskClient) -> None:
    for job_id in ("a", "b", "c"):
        register(client, minimal_job(job_id))
    assert [j["ID"] for j in statuses(client)] == ["c", "b", "a"]
    assert [j["ID"] for j in statuses(client, "?reverse=true")] == ["a", "b", "c"]
    first = client.get("/v1/jobs/statuses?per_page=2")
    assert [j["ID"] for j in first.json] == ["c", "b"]  # type: ignore[union-attr]
    token = first.headers["X-Nomad-NextToken"]
    assert token == str(statuses(client, "?reverse=true")[0]["ModifyIndex"])
    rest = client.get(f"/v1/jobs/statuses?per_page=2&next_token={token}")
    assert [j["ID"] for j in rest.json] == ["a"] and "X-Nomad-NextToken" not in rest.headers  # type: ignore[union-attr]
    assert client.get("/v1/jobs/statuses?next_token=x").status_code == 400


def test_children_only_when_asked_and_parents_list_their_statuses(client: FlaskClient) -> None:
    register(client, minimal_job("render", Type="batch", ParameterizedJob={}))
    child = client.post("/v1/job/render/dispatch", json={}).json["DispatchedJobID"]  # type: ignore[index]
    parents = statuses(client)
    assert [j["ID"] for j in parents] == ["render"]
    assert parents[0]["ChildStatuses"] == ["pending"] and parents[0]["Allocs"] is None
    everything = statuses(client, "?include_children=true")
    assert {j["ID"] for j in everything} == {"render", child}
    assert next(j for j in everything if j["ID"] == child)["ParentID"] == "render"


def test_a_post_names_the_jobs_across_namespaces(client: FlaskClient) -> None:
    assert client.put("/v1/namespace/team-a", json={"Name": "team-a"}).status_code == 200
    register(client, minimal_job("web"))
    register(client, minimal_job("api"))
    register(client, minimal_job("web", Namespace="team-a"))
    wanted = {"Jobs": [{"ID": "web", "Namespace": "team-a"}, {"ID": "api"}]}
    found = statuses(client, json=wanted)
    assert sorted((j["Namespace"], j["ID"]) for j in found) == [("default", "api"), ("team-a", "web")]
    for body, field in (({}, "Jobs"), ({"Jobs": [{"Namespace": "x"}]}, "Jobs[0]"), ({"Jobs": "web"}, "Jobs")):
        refused = client.post("/v1/jobs/statuses", json=body)
        assert refused.status_code == 400 and field in refused.get_data(as_text=True), body
