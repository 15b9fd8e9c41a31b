"""The routes tools call: status leader/peers, agent members, regions, prefix and fuzzy search,
job and node evaluate (empty body and Nomad's JobEvaluateRequest), and a 404 naming the route
for a /v1/job/:id/<sub-route> corral does not have."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from tests.support.api import json_body, minimal_job, node_body, register
from tests.support.fuzz import FUZZ, body_texts, content_types, scalars, send, texts
from tests.support.rows import insert_allocation, insert_deployment, insert_node, pairs

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def body_of(resp: Any) -> Any:
    assert resp.status_code == 200, resp.json
    return resp.json


def error_fields(resp: Any) -> list[str]:
    return [e["field"] for e in resp.json["errors"]]


def test_status_leader_is_this_server_while_a_leader_term_is_live(client: FlaskClient, pg: Conn) -> None:
    assert body_of(client.get("/v1/status/leader")) == ""  # no leader process
    pg.execute(
        "INSERT INTO leader_terms (role, term, holder, holder_backend_pid, acquired_at, renewed_at) "
        "VALUES ('leader', 3, 'host-a:123', 1, now(), now())"
    )
    leader = body_of(client.get("/v1/status/leader"))
    assert isinstance(leader, str) and leader.rpartition(":")[2].isdigit()
    assert body_of(client.get("/v1/status/peers")) == [leader]
    pg.execute("UPDATE leader_terms SET renewed_at = now() - interval '1 minute'")
    assert body_of(client.get("/v1/status/leader")) == ""


def test_agent_members_lists_this_server_and_the_role_holders(client: FlaskClient, pg: Conn) -> None:
    pg.execute(
        "INSERT INTO leader_terms (role, term, holder, holder_backend_pid, acquired_at, renewed_at) VALUES "
        "('leader', 2, 'host-a:123', 1, now(), now()), ('applier', 5, 'host-b:9', 2, now(), now() - interval '1 hour')"
    )
    body = body_of(client.get("/v1/agent/members"))
    assert {"ServerName", "ServerRegion", "ServerDC", "Members"} <= set(body)
    assert body["ServerRegion"] == "global"
    members = body["Members"]
    assert all({"Name", "Addr", "Port", "Tags", "Status"} <= set(m) for m in members)
    assert [m["Tags"]["role"] for m in members] == ["server", "applier", "leader"]
    assert [m["Status"] for m in members] == ["alive", "failed", "alive"]
    assert members[2]["Tags"]["term"] == "2" and members[2]["Addr"] == "host-a"
    assert body_of(client.get("/v1/regions")) == ["global"]


def test_prefix_search_by_context_and_all(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, minimal_job("web-api"))["EvalID"]
    register(client, minimal_job("web-cache"))
    register(client, minimal_job("batchy"))
    node = insert_node(pg)
    alloc = insert_allocation(pg, node, eval_id, job_id="web-api")
    deployment = insert_deployment(pg, job_id="web-api")

    body = body_of(client.post("/v1/search", json={"Prefix": "web", "Context": "jobs"}))
    assert body["Matches"] == {"jobs": ["web-api", "web-cache"]}
    assert body["Truncations"] == {"jobs": False}
    assert isinstance(body["Index"], int)

    everything = body_of(client.put("/v1/search", json={"Prefix": alloc[:6], "Context": "all"}))
    assert alloc in everything["Matches"]["allocs"]
    assert {"jobs", "evals", "nodes", "deployment", "namespaces", "node_pools", "volumes"} <= set(everything["Matches"])
    assert body_of(client.post("/v1/search", json={"Prefix": deployment, "Context": "deployment"}))["Matches"] == {
        "deployment": [deployment]
    }
    assert body_of(client.post("/v1/search", json={"Prefix": node[:4], "Context": "nodes"}))["Matches"]["nodes"] == [
        node
    ]
    assert body_of(client.post("/v1/search", json={"Prefix": "def", "Context": "namespaces"}))["Matches"] == {
        "namespaces": ["default"]
    }
    # A LIKE wildcard is a character, not a pattern.
    assert body_of(client.post("/v1/search", json={"Prefix": "%", "Context": "jobs"}))["Matches"] == {"jobs": []}


def test_prefix_search_truncates_at_twenty(client: FlaskClient) -> None:
    for i in range(21):
        register(client, minimal_job(f"svc-{i:02}"))
    body = body_of(client.post("/v1/search", json={"Prefix": "svc-", "Context": "jobs"}))
    assert len(body["Matches"]["jobs"]) == 20 and body["Truncations"]["jobs"] is True


def test_fuzzy_search_expands_jobs_into_groups_and_tasks(client: FlaskClient, pg: Conn) -> None:
    job = minimal_job(
        "api-server",
        TaskGroups=[
            {
                "Name": "frontend",
                "Count": 1,
                "Tasks": [{"Name": "nginx-proxy", "Driver": "raw_exec", "Config": {"command": "/usr/bin/nginx"}}],
            }
        ],
    )
    register(client, job)
    assert (
        client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()), Name="nginx-box")}).status_code
        == 200
    )
    body = body_of(client.post("/v1/search/fuzzy", json={"Text": "NGINX", "Context": "all"}))
    matches = body["Matches"]
    assert matches["tasks"] == [{"ID": "nginx-proxy", "Scope": ["default", "api-server", "frontend"]}]
    assert matches["commands"] == [
        {"ID": "/usr/bin/nginx", "Scope": ["default", "api-server", "frontend", "nginx-proxy"]}
    ]
    assert [m["ID"] for m in matches["nodes"]] == ["nginx-box"]
    assert body["Truncations"]["jobs"] is False
    jobs = body_of(client.post("/v1/search/fuzzy", json={"Text": "serv", "Context": "jobs"}))["Matches"]
    assert jobs["jobs"] == [{"ID": "api-server", "Scope": ["default", "api-server"]}]
    resp = client.post("/v1/search/fuzzy", json={"Text": "x", "Context": "all"})
    assert resp.status_code == 400 and error_fields(resp) == ["Text"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"Prefix": "a", "Context": "galaxies"}, "Context"), ({"Prefix": 5, "Context": "jobs"}, "Prefix")],
)
def test_bad_search_requests_are_400(client: FlaskClient, body: dict[str, Any], field: str) -> None:
    resp = client.post("/v1/search", json=body)
    assert resp.status_code == 400 and error_fields(resp) == [field]


def test_job_evaluate_with_an_empty_body_creates_an_evaluation(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    for method in (client.put, client.post):
        resp = method("/v1/job/web/evaluate")
        body = body_of(resp)
        row = pg.execute("SELECT triggered_by, status FROM evaluations WHERE id = %s", (body["EvalID"],)).fetchone()
        assert row == ("job-register", "pending")
        assert body["EvalCreateIndex"] == body["Index"] > 0


def test_job_evaluate_force_reschedule_marks_failed_allocations(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    node = insert_node(pg)
    failed = insert_allocation(pg, node, eval_id, client_status="failed")
    running = insert_allocation(pg, node, eval_id, client_status="running")
    body = {"JobID": "web", "EvalOptions": {"ForceReschedule": True}}
    created = body_of(client.put("/v1/job/web/evaluate", json=body))["EvalID"]
    assert pg.execute("SELECT count(*) FROM evaluations WHERE id = %s", (created,)).fetchone() == (1,)
    marks = pairs(pg.execute("SELECT id::text, desired_transition FROM allocations").fetchall())
    assert marks[failed] == {"ForceReschedule": True} and not marks[running]


@pytest.mark.parametrize(
    ("url", "body", "status", "field"),
    [
        ("/v1/job/missing/evaluate", None, 404, "JobID"),
        ("/v1/job/web/evaluate", {"JobID": "other"}, 400, "JobID"),
        ("/v1/job/web/evaluate", {"EvalOptions": {"ForceReschedule": "yes"}}, 400, "EvalOptions.ForceReschedule"),
        ("/v1/job/web/evaluate", {"EvalOptions": []}, 400, "EvalOptions"),
    ],
)
def test_job_evaluate_errors(
    client: FlaskClient, pg: Conn, url: str, body: dict[str, Any] | None, status: int, field: str
) -> None:
    register(client, minimal_job())
    before = pg.execute("SELECT count(*) FROM evaluations").fetchone()
    resp = client.put(url, json=body) if body is not None else client.put(url)
    assert resp.status_code == status and error_fields(resp) == [field]
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == before


def test_periodic_jobs_cannot_be_evaluated(client: FlaskClient) -> None:
    register(client, minimal_job("nightly", Type="batch", Periodic={"Spec": "0 3 * * *", "SpecType": "cron"}))
    resp = client.put("/v1/job/nightly/evaluate")
    assert resp.status_code == 400 and "periodic" in json_body(resp)["detail"]


def test_node_evaluate_creates_an_evaluation_per_job_on_the_node(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    node = insert_node(pg)
    insert_allocation(pg, node, eval_id)
    body = body_of(client.put(f"/v1/node/{node}/evaluate"))
    assert len(body["EvalIDs"]) == 1
    row = pg.execute("SELECT triggered_by, job_id, node_id::text FROM evaluations WHERE id = %s", (body["EvalIDs"][0],))
    assert row.fetchone() == ("node-update", "web", node)
    assert client.put(f"/v1/node/{uuid.uuid4()}/evaluate").status_code == 404
    assert client.put("/v1/node/nope/evaluate").status_code == 400


def test_unknown_job_sub_routes_are_404_naming_the_route(client: FlaskClient) -> None:
    register(client, minimal_job())
    for resp, sub in (
        (client.get("/v1/job/web/nothing"), "GET /v1/job/<id>/nothing"),
        (client.put("/v1/job/web/frobnicate"), "PUT /v1/job/<id>/frobnicate"),
        (client.delete("/v1/job/web/x"), "DELETE /v1/job/<id>/x"),
    ):
        assert resp.status_code == 404
        assert error_fields(resp) == ["URL"]
        assert f"no route {sub}" in json_body(resp)["detail"]
    # A job whose ID has a slash is still a job, registered through either route.
    register(client, minimal_job("team/web"))
    assert body_of(client.put("/v1/job/web/api", json={"Job": minimal_job("web/api")}))["EvalID"]
    assert body_of(client.get("/v1/job/team/web"))["ID"] == "team/web"
    assert error_fields(client.get("/v1/job/nothing/web")) == ["JobID"]


SEARCH_KEYS = st.sampled_from(["Prefix", "Text", "Context", "Namespace", "JobID", "EvalOptions", "ForceReschedule"])
search_bodies = st.recursive(
    scalars | st.sampled_from(["all", "jobs", "nodes", "evals", "web", "*", "groups"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(SEARCH_KEYS | body_texts, children, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(body=search_bodies, content_type=content_types, job_id=texts)
def test_arbitrary_search_and_evaluate_bodies_never_5xx(
    client: FlaskClient, body: Any, content_type: str | None, job_id: str
) -> None:
    ident = quote(job_id, safe="") or "web"
    for url in ("/v1/search", "/v1/search/fuzzy", f"/v1/job/{ident}/evaluate", f"/v1/job/{ident}/x"):
        send(client, "PUT", url, body, content_type)


def test_an_id_of_slashes_is_routed_not_redirected(client: FlaskClient) -> None:
    # "/v1/job/%2F/evaluate" decodes to "/v1/job///evaluate"; merging the slashes would send the
    # caller to another object with an HTML redirect.
    resp = client.put("/v1/job/%2F/evaluate")
    assert resp.status_code == 404 and resp.is_json
    assert error_fields(resp) == ["URL"]
    assert "PUT /v1/job///evaluate" in json_body(resp)["detail"]
