"""Cross-namespace lists with ACLs on show only what the caller may read, and do so before
`per_page` cuts the page and before `?filter=` runs: no item, no X-Nomad-NextToken and no filter
answer names an object of a namespace the token cannot read (issue 41, item 1). Every route whose
requirement is ListIn is walked, so a list added later is covered without editing this file."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app import create_app
from app.api.access.authz import REQUIREMENTS
from app.api.access.requirements import ListIn
from app.db.engines import make_sessionmaker
from app.gc.core_evals import enqueue_core
from app.gc.thresholds import Thresholds
from app.settings.config import Settings
from tests.support.api import minimal_job
from tests.support.rows import insert_deployment, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]

DEFAULT_READER = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'
PASSWORD = "abc123"
EVERY_ID = quote('ID != ""')


@dataclass(frozen=True)
class Seen:
    """What one walk of a list returned: items (ID, Namespace) and the tokens handed out."""

    items: list[tuple[str, str]]
    tokens: list[str]


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


@pytest.fixture
def api(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def root(api: FlaskClient) -> str:
    resp = api.post("/v1/acl/bootstrap")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return str(answer(resp)["SecretID"])


def answer(resp: Any) -> dict[str, Any]:
    body: dict[str, Any] = resp.json
    return body


def auth(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret} if secret else {}


def put_policy(api: FlaskClient, root: str, name: str, rules: str) -> None:
    resp = api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=auth(root))
    assert resp.status_code == 200, resp.get_data(as_text=True)


def make_reader(api: FlaskClient, root: str, name: str, rules: str) -> str:
    """The secret of a new client token whose one policy, `name`, holds `rules`."""
    put_policy(api, root, name, rules)
    resp = api.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=auth(root))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return str(answer(resp)["SecretID"])


@pytest.fixture
def reader(api: FlaskClient, root: str) -> str:
    """A token that reads only `default`."""
    return make_reader(api, root, "reader", DEFAULT_READER)


@pytest.fixture
def anonymous(api: FlaskClient, root: str) -> str:
    """No token: the anonymous policy, which reads only `default`."""
    put_policy(api, root, "anonymous", DEFAULT_READER)
    return ""


@pytest.fixture
def world(api: FlaskClient, root: str, pg: Conn, engine: Engine) -> None:
    """Jobs (with scaling policies), evaluations, allocations, deployments, services, host
    volumes and volume claims in `default` and in `secret`, and a core
    evaluation (namespace '-'), which a token reading only `default` may not list either."""
    assert api.put("/v1/namespace/secret", json={"Name": "secret"}, headers=auth(root)).status_code == 200
    jobs = [
        ("default", minimal_job("victim", Meta={"db_password": "xyz"})),
        ("secret", minimal_job("secretjob", Meta={"db_password": PASSWORD})),
        ("default", minimal_job("web", Meta={"db_password": "xyz"})),
        ("secret", minimal_job("vault", Meta={"db_password": "zzz"})),
    ]
    node = insert_node(pg)
    first_alloc: dict[str, tuple[str, str]] = {}  # namespace -> (job, allocation), for the volume claims
    for namespace, job in jobs:
        job["TaskGroups"][0]["Scaling"] = {"Min": 1, "Max": 4}  # a scaling policy in each namespace
        resp = api.put(f"/v1/jobs?namespace={namespace}", json={"Job": job}, headers=auth(root))
        assert resp.status_code == 200, resp.json
        alloc_id = insert_allocation(pg, node, str(answer(resp)["EvalID"]), namespace, job["ID"])
        insert_deployment(pg, job_id=job["ID"])
        insert_service(pg, node, alloc_id, namespace, job["ID"])
        first_alloc.setdefault(namespace, (job["ID"], alloc_id))
    for namespace in ("default", "secret"):  # a dynamic host volume in each (GET /v1/volumes?type=host)
        volume = {"Name": f"scratch-{namespace}", "NodeID": node}
        resp = api.put(f"/v1/volume/host/create?namespace={namespace}", json={"Volume": volume}, headers=auth(root))
        assert resp.status_code == 200, resp.json
        # and a sticky claim on it (GET /v1/volumes/claims)
        insert_claim(pg, namespace, *first_alloc[namespace], answer(resp)["Volume"]["ID"], volume["Name"])
    with make_sessionmaker(engine)() as session, session.begin():
        assert enqueue_core(session, "job-gc", Thresholds.from_settings(Settings())) is not None


def insert_claim(pg: Conn, namespace: str, job_id: str, alloc_id: str, volume_id: str, name: str) -> None:
    """A sticky group's claim on the volume, as the applier writes it."""
    pg.execute(
        "INSERT INTO host_volume_claims (id, namespace, job_id, task_group, alloc_id, volume_id, volume_name, "
        "create_index, modify_index) VALUES (gen_random_uuid(), %s, %s, 'g', %s, %s, %s, state_index_own(), "
        "state_index_own())",
        (namespace, job_id, alloc_id, volume_id, name),
    )


def insert_service(pg: Conn, node_id: str, alloc_id: str, namespace: str, job_id: str) -> None:
    """A Nomad service registration of the allocation, as its client would send it."""
    pg.execute(
        "INSERT INTO service_registrations (id, service_name, namespace, node_id, datacenter, job_id, alloc_id, "
        "address, port, create_index, modify_index) "
        "VALUES (%s, %s, %s, %s, 'dc1', %s, %s, '10.0.0.1', 8080, state_index_own(), state_index_own())",
        (f"_nomad-task-{alloc_id}-group-g-{job_id}-http", f"{job_id}-svc", namespace, node_id, job_id, alloc_id),
    )


def insert_allocation(pg: Conn, node_id: str, eval_id: str, namespace: str, job_id: str) -> str:
    alloc_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
        "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
        "modify_index, alloc_modify_index) "
        "SELECT %s, namespace, id, version, %s, %s, 'n1', 'g', id || '.g[0]', 'run', 'running', 100, 256, 256, "
        "300, state_index_own(), state_index_own(), state_index_own() FROM jobs WHERE namespace = %s AND id = %s",
        (alloc_id, eval_id, node_id, namespace, job_id),
    )
    return alloc_id


# Routes that answer a count of what the caller may list rather than the list: checked by
# test_a_count_counts_only_what_the_caller_may_list.
COUNTS = {"evals.count_evaluations"}
# Every route whose requirement is ListIn, from the route table itself.
LIST_ENDPOINTS = sorted(
    endpoint for endpoint, needs in REQUIREMENTS.items() if isinstance(needs, ListIn) and endpoint not in COUNTS
)


# Lists that need a query parameter to list anything: /v1/volumes lists host volumes with type=host.
QUERIES = {"/v1/volumes": "type=host&"}


def across(route: str) -> str:
    """The list across every namespace."""
    return f"{route}?{QUERIES.get(route, '')}namespace=*"


def route_of(app: Flask, endpoint: str) -> str:
    rules = [rule for rule in app.url_map.iter_rules() if rule.endpoint == endpoint]
    assert len(rules) == 1, (endpoint, rules)
    # A ListIn list with a path parameter needs an object to name: this walk must learn to build it.
    assert not rules[0].arguments, rules[0].rule
    return rules[0].rule


def walk(api: FlaskClient, url: str, secret: str, per_page: int = 1) -> Seen:
    items: list[tuple[str, str]] = []
    tokens: list[str] = []
    token = ""
    for _ in range(100):
        resp = api.get(f"{url}&per_page={per_page}&next_token={quote(token)}", headers=auth(secret))
        assert resp.status_code == 200, (url, resp.status_code, resp.get_data(as_text=True))
        assert isinstance(resp.json, list)
        if resp.json and "Services" in resp.json[0]:
            # /v1/services: Nomad's list is one entry per namespace, not paged (it takes no per_page).
            items += [
                (f"{i['Namespace']}/{s['ServiceName']}", str(i["Namespace"])) for i in resp.json for s in i["Services"]
            ]
            return Seen(items, tokens)
        if resp.json and "Target" in resp.json[0]:
            # /v1/scaling/policies: Nomad's list is not paged and names the namespace in Target.
            items += [(str(i["ID"]), str(i["Target"]["Namespace"])) for i in resp.json]
            return Seen(items, tokens)
        assert len(resp.json) <= per_page
        items += [(str(i["ID"]), str(i["Namespace"])) for i in resp.json]
        token = resp.headers.get("X-Nomad-NextToken", "")
        if not token:
            return Seen(items, tokens)
        tokens.append(token)
    raise AssertionError(f"pagination of {url} never ended")


def hidden_ids(everything: Seen) -> set[str]:
    return {object_id for object_id, namespace in everything.items if namespace != "default"}


def variants(route: str, everything: Seen) -> list[str]:
    """The route across namespaces plainly, reversed, filtered (the in-Python paginator, and for
    evaluations not the SQL keyset path) and by the prefix of each hidden object's ID."""
    base = across(route)
    urls = [base, f"{base}&reverse=true", f"{base}&filter={EVERY_ID}"]
    urls += sorted({f"{base}&prefix={object_id[:1]}" for object_id in hidden_ids(everything)})
    return urls


def assert_only_default(seen: Seen, hidden: set[str], url: str) -> None:
    assert all(namespace == "default" for _, namespace in seen.items), (url, seen.items)
    for token in seen.tokens:
        assert not token.startswith("secret."), (url, token)
        assert not any(object_id in token for object_id in hidden), (url, token, hidden)


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("who", ["reader", "anonymous"])
@pytest.mark.parametrize("endpoint", LIST_ENDPOINTS)
def test_every_list_route_walks_only_readable_items_and_tokens(
    api: FlaskClient, app: Flask, root: str, endpoint: str, who: str, request: pytest.FixtureRequest
) -> None:
    secret: str = request.getfixturevalue(who)
    route = route_of(app, endpoint)
    everything = walk(api, across(route), root)
    hidden = hidden_ids(everything)
    assert hidden, f"{route}: the fixture must put objects in namespaces the caller cannot read"
    for url in variants(route, everything):
        as_root = walk(api, url, root, per_page=1000)
        seen = walk(api, url, secret)
        assert_only_default(seen, hidden, url)
        # Nothing readable goes missing either: the readable part of root's answer, in order.
        assert seen.items == [item for item in as_root.items if item[1] == "default"], url
        assert walk(api, url, secret, per_page=2).items == seen.items, url


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("endpoint", LIST_ENDPOINTS)
def test_a_management_token_still_lists_every_namespace(api: FlaskClient, app: Flask, root: str, endpoint: str) -> None:
    namespaces = {namespace for _, namespace in walk(api, across(route_of(app, endpoint)), root).items}
    assert {"default", "secret"} <= namespaces, endpoint


@pytest.mark.usefixtures("world")
def test_the_filter_is_no_oracle_on_a_hidden_job(api: FlaskClient, reader: str) -> None:
    """The red team's attack: a guess that is right must answer exactly as one that is wrong."""

    def ask(expression: str) -> tuple[int, Any, str | None]:
        resp = api.get(f"/v1/jobs?namespace=*&per_page=1&filter={quote(expression)}", headers=auth(reader))
        return resp.status_code, resp.json, resp.headers.get("X-Nomad-NextToken")

    # Jobs list in namespace.ID order: default.victim, default.web, secret.secretjob, ...
    for probe in ('ID == "victim" or ', ""):
        right = ask(f'{probe}Meta.db_password matches "^{PASSWORD[:1]}"')
        wrong = ask(f'{probe}Meta.db_password matches "^q"')
        assert right == wrong, (probe, right, wrong)
        assert right[0] == 200 and right[2] is None, right
    assert ask('Namespace == "secret"') == (200, [], None)
    for route in ("/v1/jobs", "/v1/allocations", "/v1/evaluations", "/v1/deployments"):
        resp = api.get(f"{route}?namespace=secret&per_page=1", headers=auth(reader))
        assert resp.status_code == 403, route


@pytest.mark.usefixtures("world")
def test_search_and_namespaces_reveal_nothing_of_a_hidden_namespace(api: FlaskClient, reader: str) -> None:
    for url, body in (("/v1/search", {"Prefix": "s", "Context": "all"}), ("/v1/search/fuzzy", {"Text": "secret"})):
        resp = api.post(url, json={**body, "Namespace": "*"}, headers=auth(reader))
        assert resp.status_code == 403, (url, resp.get_data(as_text=True))
    for query in ("", "?prefix=s", "?prefix=secret"):
        resp = api.get(f"/v1/namespaces{query}", headers=auth(reader))
        assert resp.status_code == 200 and "secret" not in resp.get_data(as_text=True), query
        assert "X-Nomad-NextToken" not in resp.headers


@pytest.mark.usefixtures("world")
def test_a_core_evaluation_is_read_only_by_who_may_read_namespace_dash(
    api: FlaskClient, root: str, reader: str, pg: Conn
) -> None:
    """Core (GC) evaluations have no namespace: Nomad's "-", not a namespace anyone may read."""
    row = pg.execute("SELECT id::text FROM evaluations WHERE namespace IS NULL").fetchone()
    assert row is not None
    core = f"/v1/evaluation/{row[0]}"
    assert api.get(core, headers=auth(reader)).status_code == 403
    assert api.get(core).status_code == 403
    assert api.get(core, headers=auth(root)).status_code == 200
    dash = make_reader(api, root, "dash-reader", 'namespace "-" { policy = "read" }')
    assert api.get(core, headers=auth(dash)).status_code == 200


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("who", ["reader", "anonymous"])
@pytest.mark.parametrize("endpoint", sorted(COUNTS))
def test_a_count_counts_only_what_the_caller_may_list(
    api: FlaskClient, app: Flask, root: str, endpoint: str, who: str, request: pytest.FixtureRequest
) -> None:
    secret: str = request.getfixturevalue(who)
    count = route_of(app, endpoint)
    listed = count.removesuffix("/count")  # the list the count is of
    everything = walk(api, across(listed), root)
    assert hidden_ids(everything), f"{listed}: the fixture must put objects in namespaces the caller cannot read"
    readable = [item for item in everything.items if item[1] == "default"]

    def counted(token: str) -> object:
        resp = api.get(across(count), headers=auth(token))
        assert resp.status_code == 200, resp.get_data(as_text=True)
        assert resp.json is not None
        return resp.json["Count"]

    assert counted(root) == len(everything.items)
    assert counted(secret) == len(readable)
