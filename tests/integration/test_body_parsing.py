"""Every body-parsing route, the heartbeat included, answers 400 naming the problem to deeply
nested JSON and to a body that is not JSON, never 500 (RecursionError) and never a garbage
body read silently as `{}` (issue 23)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import node_body

pytestmark = pytest.mark.integration
DEEP = "[" * 100_000 + "]" * 100_000
NESTED_OBJECT = '{"Status": ' + '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}"
GARBAGE = b"\x00\xffnot json at all{"


def registered(client: FlaskClient) -> tuple[str, str]:
    node_id = str(uuid.uuid4())
    body = client.put("/v1/node/register", json={"Node": node_body(node_id)}).json
    assert body is not None
    return node_id, str(body["SecretID"])


def routes(node_id: str) -> list[str]:
    some = str(uuid.uuid4())
    return [
        f"/v1/node/{node_id}/heartbeat",
        f"/v1/node/{node_id}/allocations",
        "/v1/node/register",
        f"/v1/node/{node_id}/drain",
        f"/v1/node/{node_id}/eligibility",
        "/v1/jobs",
        "/v1/job/web",
        "/v1/jobs/parse",
        "/v1/job/web/plan",
        "/v1/job/web/scale",
        "/v1/job/web/revert",
        "/v1/job/web/stable",
        "/v1/job/web/dispatch",
        "/v1/operator/scheduler/configuration",
        f"/v1/deployment/promote/{some}",
        f"/v1/deployment/pause/{some}",
        f"/v1/deployment/fail/{some}",
        f"/v1/deployment/allocation-health/{some}",
    ]


def test_heartbeat_refuses_deep_nesting_and_garbage_with_a_400_naming_the_problem(client: FlaskClient) -> None:
    node_id, secret = registered(client)
    path, auth = f"/v1/node/{node_id}/heartbeat", {"X-Nomad-Token": secret}

    deep = client.put(path, data=DEEP, headers=auth)
    assert deep.status_code == 400, deep.get_data(as_text=True)
    assert "nested too deeply" in deep.get_json()["detail"]
    nested = client.put(path, data=NESTED_OBJECT, headers=auth)
    assert nested.status_code == 400 and "nested too deeply" in nested.get_json()["detail"]

    garbage = client.put(path, data=GARBAGE, headers=auth)
    assert garbage.status_code == 400, garbage.get_data(as_text=True)
    assert garbage.get_json()["errors"][0]["field"] == "body"
    assert "valid JSON" in garbage.get_json()["detail"]
    not_object = client.put(path, data="[1]", headers=auth)
    assert not_object.status_code == 400 and "JSON object" in not_object.get_json()["detail"]

    # What a client may send still works: nothing at all, or a JSON object.
    assert client.put(path, headers=auth).status_code == 200
    assert client.put(path, json={"Status": "ready"}, headers=auth).status_code == 200


def test_every_body_parsing_route_refuses_deep_nesting_and_garbage(client: FlaskClient) -> None:
    node_id, secret = registered(client)
    auth = {"X-Nomad-Token": secret}
    for path in routes(node_id):
        for body in (DEEP, GARBAGE):
            answer = client.put(path, data=body, headers=auth)
            assert answer.status_code == 400, (path, body[:10], answer.status_code, answer.get_data(as_text=True))
            assert answer.get_json()["errors"][0]["field"] == "body", path


def _wrapped(key: str, depth: int) -> str:
    return f'{{"{key}": ' + "[" * depth + "]" * depth + "}"


def test_with_acls_on_deep_json_is_refused_before_and_after_the_token_check(database_url: str) -> None:
    """The ACL check reads the job's namespace, and node registration the node's SecretID, off
    the body before the route does: both parsed it with json.loads catching only ValueError, so
    JSON nested ~1,000 deep answered 500 to anyone, token or not."""
    app = create_app(Settings(database_url=database_url, acl_enabled=True), database_url)
    try:
        api = app.test_client()
        root = api.post("/v1/acl/bootstrap").json["SecretID"]
        for depth in (1_000, 5_000):
            for key in ("Job", "Node"):
                for url in ("/v1/jobs", "/v1/job/web", "/v1/job/web/plan", "/v1/validate/job", "/v1/node/register"):
                    anonymous = api.put(url, data=_wrapped(key, depth))
                    assert anonymous.status_code == 403, (url, key, depth, anonymous.get_data(as_text=True))
                    managed = api.put(url, data=_wrapped(key, depth), headers={"X-Nomad-Token": root})
                    assert managed.status_code == 400, (url, key, depth, managed.get_data(as_text=True))
                    assert managed.json["errors"] == [
                        {"field": "body", "message": "is nested too deeply (at most 64 levels)"}
                    ]
        assert api.get("/v1/jobs", headers={"X-Nomad-Token": root}).json == []
    finally:
        app.extensions["corral"].close()


def test_json_in_a_query_parameter_nested_too_deeply_is_a_400_not_a_500(client: FlaskClient) -> None:
    """exec's `command` is JSON in the query string: nested too deeply it is a 400 naming it."""
    command = quote("[" * 5_000 + "]" * 5_000)
    answer = client.get(f"/v1/client/allocation/{uuid.uuid4()}/exec?task=t&command={command}")
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert answer.get_json()["errors"][0]["field"] == "command"
