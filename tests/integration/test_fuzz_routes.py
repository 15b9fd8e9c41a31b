"""Every route the app serves (walked from Flask's url_map), every method, under hostile bodies,
path values and query strings, with ACLs off and on: never a 5xx, and a 4xx writes nothing (the
row count of every table and the state index stay as they were)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body
from tests.support.fuzz import (
    FUZZ,
    Ledger,
    Route,
    deep_text,
    deep_values,
    query_values,
    routes,
    scalars,
    texts,
    tolerated,
)

pytestmark = pytest.mark.integration

NODE_ID = "5f0c6d1e-0000-4000-8000-000000000002"
JOB_ID = "fuzz"
# Values a path variable takes: the objects that exist, so routes get past their 404s, and junk.
KNOWN = [NODE_ID, JOB_ID, "default", "5f0c6d1e-0000-4000-8000-00000000ffff", "anonymous", "self"]
HOSTILE: list[bytes] = [
    deep_text(5_000, "array").encode(),
    ('{"Job": ' + deep_text(2_000, "object") + ', "Node": ' + deep_text(1_000, "mixed") + "}").encode(),
    b"\x00\xffnot json{",
]
QUERY_KEYS = [
    "namespace", "prefix", "index", "wait", "per_page", "next_token", "filter", "reverse", "node_id", "task", "command",
]  # fmt: skip


@dataclass
class Api:
    client: FlaskClient
    ledger: Ledger
    routes: list[Route]
    token: str  # the management token with ACLs on, "" with them off
    rows: dict[str, object]  # the ledger as the last request left it


def _api(app: Flask, pg: psycopg.Connection[tuple[object, ...]], *, acl: bool) -> Api:
    client = app.test_client()
    token = str(json_body(client.post("/v1/acl/bootstrap"))["SecretID"]) if acl else ""
    auth = {"X-Nomad-Token": token} if token else {}
    node = client.put("/v1/node/register", json={"Node": node_body(NODE_ID, SecretID="fuzz-secret")}, headers=auth)
    assert node.status_code == 200, node.json
    job = client.put("/v1/jobs", json={"Job": minimal_job(JOB_ID)}, headers=auth)
    assert job.status_code == 200, job.json
    ledger = Ledger(pg)
    return Api(client, ledger, routes(app), token, ledger.read())


@pytest.fixture(params=[False, True], ids=["acl-off", "acl-on"])
def api(request: pytest.FixtureRequest, database_url: str, pg: psycopg.Connection[tuple[object, ...]]) -> Iterator[Api]:
    settings = Settings(
        database_url=database_url, max_blocking_wait_s=1, force_gc_wait_s=0.01, acl_enabled=request.param
    )
    app = create_app(settings, database_url)
    try:
        yield _api(app, pg, acl=request.param)
    finally:
        app.extensions["corral"].close()


def call(api: Api, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> int:
    """One request; asserts it is no 5xx and that a 4xx wrote nothing."""
    # Unbuffered: the event stream's answer never ends; its status is all we need.
    resp = api.client.open(url, method=method, data=body, headers=headers, buffered=False)
    status = resp.status_code
    detail = resp.get_data(as_text=True)[:300] if status >= 400 else ""
    resp.close()
    assert tolerated(status, url), (method, url, (body or b"")[:80], status, detail)
    before, api.rows = api.rows, api.ledger.read()
    if 400 <= status < 500:
        changed = Ledger.changed(before, api.rows)
        assert not changed, (method, url, (body or b"")[:80], status, detail, changed)
    return status


def test_every_route_refuses_hostile_bodies_without_a_5xx_or_a_write(api: Api) -> None:
    tokens = [""] + ([api.token] if api.token else [])  # anonymous and management with ACLs on
    for route in api.routes:
        url = route.url(dict.fromkeys(route.variables, JOB_ID if "job" in route.rule else NODE_ID))
        for body in HOSTILE:
            # Anonymous with ACLs on: the deep bodies, which the ACL check reads before any route.
            for token in tokens if body.startswith((b"[", b"{")) else tokens[-1:]:
                headers = {"X-Nomad-Token": token} if token else {}
                status = call(api, route.method, url, body, headers)
                if route.method in ("PUT", "POST") and token == api.token and body.startswith(b"[["):
                    # A write route that reads its body names the problem (or has no body to read).
                    assert status != 200 or route.rule in BODYLESS_WRITES, (route, status)


# Write routes whose body is optional or ignored, as in Nomad.
BODYLESS_WRITES = {
    "/v1/acl/bootstrap",
    "/v1/client/gc",
    "/v1/system/gc",
    "/v1/system/reconcile/summaries",
    "/v1/node/<node_id>/evaluate",
    "/v1/node/<node_id>/purge",
    "/v1/job/<path:job_id>/dispatch/payload",  # the raw body is the payload, whatever it holds
    "/v1/job/<path:job_id>/periodic/force",
    "/v1/client/allocation/<alloc_id>/restart",
    "/v1/client/allocation/<alloc_id>/signal",
    "/v1/operator/keyring/rotate",
    "/v1/acl/token/onetime",  # Nomad's takes no body: a one-time token for the caller's own token
}


@st.composite
def requests(draw: st.DrawFn, api: Api) -> tuple[Route, str, bytes | None, dict[str, str]]:
    route = draw(st.sampled_from(api.routes))
    values = {name: draw(st.sampled_from(KNOWN) | texts | st.uuids().map(str)) for name in route.variables}
    # Some parameters are JSON (exec's `command`): deep ones too, as long as a request line may be.
    deep_query = st.builds(deep_text, st.integers(min_value=60, max_value=2_000), st.sampled_from(["array", "mixed"]))
    params = draw(st.dictionaries(st.sampled_from(QUERY_KEYS) | texts, query_values | deep_query, max_size=4))
    if "index" in params:
        params["wait"] = "1ms"  # a blocking query would wait for a change that never comes
    json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3))
    body = draw(
        st.none()
        | json_values.map(lambda v: json.dumps(v, allow_nan=True).encode())
        | st.builds(
            lambda key, deep: f'{{"{key}": {deep}}}'.encode(), st.sampled_from(["Job", "Node", "x"]), deep_values
        )
        | st.binary(max_size=40)
    )
    headers = {"X-Nomad-Token": api.token} if api.token and draw(st.booleans()) else {}
    if draw(st.booleans()):
        headers["Content-Type"] = "application/json"
    query = f"?{urlencode(params)}" if params else ""
    return route, route.url(values) + query, body, headers


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_random_requests_to_random_routes_never_5xx_nor_write_on_4xx(api: Api, data: st.DataObject) -> None:
    route, url, body, headers = data.draw(requests(api))
    call(api, route.method, url, body, headers)


def test_the_walk_covers_every_route(api: Api) -> None:
    """The walk is the app's own url_map: a new route is fuzzed without anyone listing it."""
    rules = {route.rule for route in api.routes}
    assert {"/v1/jobs", "/v1/validate/job", "/v1/node/register", "/v1/event/stream", "/v1/search/fuzzy"} <= rules
    assert len(api.routes) > 90, len(api.routes)
