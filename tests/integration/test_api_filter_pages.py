"""filter=, per_page=, next_token= and reverse= on every list route, as Nomad's paginator: the
filter runs on the full object before the page is cut, X-Nomad-NextToken is the sort key of the
first object of the next page, and a bad filter is a 400 naming `filter` and the position."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job, node_body, register
from tests.support.rows import insert_allocation, insert_deployment, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def listed(client: FlaskClient, url: str, field: str = "ID") -> list[Any]:
    resp = client.get(url)
    assert resp.status_code == 200, resp.json
    assert isinstance(resp.json, list)
    return [item[field] for item in resp.json]


def walk(client: FlaskClient, url: str, per_page: int) -> tuple[list[str], list[str]]:
    """Every ID the route lists, page by page, and the tokens it handed out."""
    seen: list[str] = []
    tokens: list[str] = []
    token = ""
    joiner = "&" if "?" in url else "?"
    for _ in range(50):
        resp = client.get(f"{url}{joiner}per_page={per_page}&next_token={quote(token)}")
        assert resp.status_code == 200, resp.json
        page = [item["ID"] for item in json_body(resp)]
        assert len(page) <= per_page
        seen += page
        token = resp.headers.get("X-Nomad-NextToken", "")
        if not token:
            return seen, tokens
        tokens.append(token)
    raise AssertionError("pagination never ended")


def f(expression: str) -> str:
    return "filter=" + quote(expression)


def error_of(client: FlaskClient, url: str) -> str:
    resp = client.get(url)
    assert resp.status_code == 400, resp.json
    body: dict[str, Any] = json_body(resp)
    assert [e["field"] for e in body["errors"]] == ["filter"]
    return str(body["errors"][0]["message"])


def test_jobs_filter_on_the_full_job_and_page_by_namespace_and_id(client: FlaskClient, pg: Conn) -> None:
    pg.execute("INSERT INTO namespaces (name, create_index, modify_index) VALUES ('prod', 1, 1)")
    for job_id in ("b-api", "a-web", "c-batch"):
        register(client, minimal_job(job_id, Meta={"team": "blue" if job_id != "c-batch" else "red"}))
    register(client, minimal_job("d-cache", Type="batch"))
    client.put("/v1/jobs?namespace=prod", json={"Job": minimal_job("a-prod")})

    assert listed(client, "/v1/jobs") == ["a-web", "b-api", "c-batch", "d-cache"]
    assert listed(client, f"/v1/jobs?{f('Meta.team == blue')}") == ["a-web", "b-api"]
    assert listed(client, f"/v1/jobs?{f('Type == batch')}") == ["d-cache"]
    # The full job: task groups are there (Nomad evaluates the Job struct), and the stub's summary.
    assert listed(client, "/v1/jobs?" + f("any TaskGroups as g { g.Count == 2 }")) == [
        "a-web",
        "b-api",
        "c-batch",
        "d-cache",
    ]
    assert listed(client, "/v1/jobs?" + f("JobSummary.Summary.g.Running == 0 and ID matches `^c`")) == ["c-batch"]
    assert listed(client, f"/v1/jobs?namespace=*&{f('Namespace == prod')}") == ["a-prod"]

    seen, tokens = walk(client, "/v1/jobs?namespace=*", 2)
    assert seen == ["a-web", "b-api", "c-batch", "d-cache", "a-prod"]
    assert tokens == ["default.c-batch", "prod.a-prod"]
    # Filter before paginating: a page holds per_page matches.
    assert walk(client, "/v1/jobs?" + f("Meta.team != red"), 1)[0] == ["a-web", "b-api", "d-cache"]
    assert listed(client, "/v1/jobs?reverse=true") == ["d-cache", "c-batch", "b-api", "a-web"]
    assert listed(client, "/v1/jobs?reverse=true&per_page=1&next_token=default.b-api") == ["b-api"]


def test_evaluations_filter_and_page_by_create_index_or_by_id(client: FlaskClient, pg: Conn) -> None:
    evals = [str(register(client, minimal_job(f"job-{i}"))["EvalID"]) for i in range(5)]
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (evals[1],))
    assert listed(client, f"/v1/evaluations?{f('Status == complete')}") == [evals[1]]
    assert (
        listed(
            client, "/v1/evaluations?" + f('(JobID == "job-3" or JobID == `job-4`) and TriggeredBy == "job-register"')
        )
        == evals[3:]
    )
    assert walk(client, f"/v1/evaluations?{f('Status == pending')}", 2)[0] == [e for e in evals if e != evals[1]]
    seen, tokens = walk(client, "/v1/evaluations", 2)
    assert seen == evals
    assert all(t.split(".", 1)[1] in evals for t in tokens)
    # By prefix Nomad walks the ID index, and the token is the ID.
    by_id = sorted(evals)
    prefixed = walk(client, "/v1/evaluations?prefix=", 10)[0]
    assert prefixed == evals  # an empty prefix is no prefix
    first = by_id[0][0]
    matching = [e for e in by_id if e.startswith(first)]
    assert walk(client, f"/v1/evaluations?prefix={first}&{f('Type == service')}", 1)[0] == matching
    message = error_of(client, f"/v1/evaluations?{f('Status == complete')}&job=job-1")
    assert "cannot be used with the job or status parameters" in message


def test_allocations_filter_page_and_reverse(client: FlaskClient, pg: Conn) -> None:
    eval_id = str(register(client, minimal_job())["EvalID"])
    node = insert_node(pg)
    allocs = []
    job_index = pg.execute("SELECT create_index FROM jobs WHERE id = 'web'").fetchone()
    assert job_index is not None
    base = int(str(job_index[0])) + 1  # later than the job: not an allocation of an earlier incarnation
    for i, status in enumerate(["running", "failed", "running", "complete"]):
        alloc = insert_allocation(pg, node, eval_id, client_status=status)
        pg.execute("UPDATE allocations SET create_index = %s WHERE id = %s", (base + i, alloc))
        allocs.append(alloc)
    assert listed(client, "/v1/allocations") == allocs
    assert listed(client, f"/v1/allocations?{f('ClientStatus == running')}") == [allocs[0], allocs[2]]
    assert listed(client, f"/v1/allocations?{f('ClientStatus != running')}&reverse=true") == [allocs[3], allocs[1]]
    seen, tokens = walk(client, "/v1/allocations", 3)
    assert seen == allocs and tokens == [f"{base + 3}.{allocs[3]}"]
    assert walk(client, "/v1/allocations?reverse=true", 3)[0] == allocs[::-1]
    assert listed(client, f"/v1/job/web/allocations?{f('ClientStatus == failed')}") == [allocs[1]]
    assert listed(client, f"/v1/node/{node}/allocations?{f('ClientStatus == complete')}") == [allocs[3]]
    assert listed(client, f"/v1/job/web/evaluations?{f('Status == pending')}") == [eval_id]


def test_nodes_filter_on_attributes_and_page_by_id(client: FlaskClient) -> None:
    ids = sorted(str(uuid.uuid4()) for _ in range(3))
    for i, node_id in enumerate(ids):
        body = node_body(node_id, Name=f"node-{2 - i}", Meta={"rack": f"r{i % 2}"}, NodeClass="gpu" if i else "")
        assert client.put("/v1/node/register", json={"Node": body}).status_code == 200
    assert listed(client, "/v1/nodes") == ids  # by ID, as Nomad, not by name
    assert listed(client, f"/v1/nodes?{f('Meta.rack == r0')}") == [ids[0], ids[2]]
    assert listed(client, "/v1/nodes?" + f('Attributes["kernel.name"] == linux and NodeClass == gpu')) == ids[1:]
    seen, tokens = walk(client, "/v1/nodes", 2)
    assert seen == ids and tokens == [ids[2]]
    assert listed(client, "/v1/nodes?reverse=true") == ids  # Nomad ignores reverse on nodes


def test_deployments_filter_and_page(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    deps = [
        insert_deployment(pg, create_index=100 + i, status=s) for i, s in enumerate(["successful", "running", "failed"])
    ]
    assert listed(client, "/v1/deployments") == deps
    assert listed(client, f"/v1/deployments?{f('Status != running')}") == [deps[0], deps[2]]
    assert walk(client, "/v1/deployments?reverse=true", 2)[0] == deps[::-1]
    assert listed(client, f"/v1/job/web/deployments?{f('Status == failed')}") == [deps[2]]


@pytest.mark.parametrize(
    "route",
    ["/v1/jobs", "/v1/nodes", "/v1/allocations", "/v1/evaluations", "/v1/deployments", "/v1/job/web/allocations"],
)
def test_bad_filters_are_400_naming_the_problem(client: FlaskClient, pg: Conn, route: str) -> None:
    register(client, minimal_job())
    eval_id = pg.execute("SELECT id FROM evaluations").fetchone()
    assert eval_id is not None
    insert_allocation(pg, insert_node(pg), str(eval_id[0]))
    insert_deployment(pg)
    assert "at position 8" in error_of(client, f"{route}?{f('Status = running')}")
    assert "unterminated string literal" in error_of(client, f"{route}?" + f('ID == "x'))
    # Evaluation errors are 400s too, as in Nomad (no such field, a number field and a word).
    assert "no field 'Colour'" in error_of(client, f"{route}?{f('Colour == red')}")
    assert "not an integer" in error_of(client, f"{route}?{f('CreateIndex == many')}")


def test_per_page_must_be_a_number(client: FlaskClient) -> None:
    for route in ("/v1/jobs", "/v1/nodes", "/v1/allocations", "/v1/deployments"):
        resp = client.get(f"{route}?per_page=ten")
        assert resp.status_code == 400
        assert json_body(resp)["errors"][0]["field"] == "per_page"
