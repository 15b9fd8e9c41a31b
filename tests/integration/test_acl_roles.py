"""ACL roles over the HTTP API with ACLs on: Nomad's role routes and shapes, and a token's
effective policies including those of the roles it links (a token with only a role gets the
role's capabilities, and loses them when the role is deleted)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app import create_app
from app.settings.config import Settings
from app.wire.json import JsonObject, JsonValue
from tests.support.api import minimal_job

pytestmark = pytest.mark.integration

READ_DEFAULT = 'namespace "default" { policy = "read" }'
WRITE_DEFAULT = 'namespace "default" { policy = "write" }'


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


@pytest.fixture
def api(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def root(api: FlaskClient) -> dict[str, str]:
    secret = obj(api.post("/v1/acl/bootstrap"))["SecretID"]
    assert isinstance(secret, str)
    return auth(secret)


def auth(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret}


def obj(resp: TestResponse) -> JsonObject:
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.json
    assert isinstance(body, dict)
    return body


def items(resp: TestResponse) -> list[JsonObject]:
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.json
    assert isinstance(body, list) and all(isinstance(i, dict) for i in body)
    return body


def policy(api: FlaskClient, root: dict[str, str], name: str, rules: str) -> None:
    assert api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root).status_code == 200


def role(api: FlaskClient, root: dict[str, str], name: str, *policies: str) -> JsonObject:
    links: list[JsonValue] = [{"Name": p} for p in policies]
    return obj(api.put("/v1/acl/role", json={"Name": name, "Description": "d", "Policies": links}, headers=root))


def token(
    api: FlaskClient, root: dict[str, str], roles: list[JsonValue], policies: list[str] | None = None
) -> JsonObject:
    body: JsonObject = {"Name": "t", "Type": "client", "Policies": list(policies or []), "Roles": roles}
    return obj(api.put("/v1/acl/token", json=body, headers=root))


def secret_of(made: JsonObject) -> dict[str, str]:
    secret = made["SecretID"]
    assert isinstance(secret, str)
    return auth(secret)


def test_role_crud_in_nomads_shapes(api: FlaskClient, root: dict[str, str]) -> None:
    policy(api, root, "readers", READ_DEFAULT)
    policy(api, root, "writers", WRITE_DEFAULT)
    made = role(api, root, "ops", "readers", "readers")
    role_id = str(made["ID"])
    assert uuid.UUID(role_id) and made["Name"] == "ops" and made["Description"] == "d"
    assert made["Policies"] == [{"Name": "readers"}]  # duplicates dropped
    assert len(base64.b64decode(str(made["Hash"]))) == 32
    assert isinstance(made["CreateIndex"], int) and made["CreateIndex"] == made["ModifyIndex"]
    assert obj(api.get(f"/v1/acl/role/{role_id}", headers=root)) == made
    assert obj(api.get("/v1/acl/role/name/ops", headers=root)) == made
    assert [r["ID"] for r in items(api.get("/v1/acl/roles", headers=root))] == [role_id]
    assert items(api.get(f"/v1/acl/roles?prefix={role_id[:4]}", headers=root))[0]["ID"] == role_id
    update = {"ID": role_id, "Name": "ops2", "Description": "", "Policies": [{"Name": "writers"}]}
    changed = obj(api.post(f"/v1/acl/role/{role_id}", json=update, headers=root))
    assert changed["Name"] == "ops2" and changed["Policies"] == [{"Name": "writers"}]
    assert changed["Hash"] != made["Hash"] and changed["CreateIndex"] == made["CreateIndex"]
    assert api.delete(f"/v1/acl/role/{role_id}", headers=root).status_code == 200
    gone = api.get(f"/v1/acl/role/{role_id}", headers=root)
    assert gone.status_code == 404 and "ACL role not found" in gone.get_data(as_text=True)
    assert api.get("/v1/acl/role/name/ops2", headers=root).status_code == 404
    assert api.delete(f"/v1/acl/role/{role_id}", headers=root).status_code == 404
    assert items(api.get("/v1/acl/roles", headers=root)) == []


def test_bad_roles_are_refused_naming_the_field(api: FlaskClient, root: dict[str, str]) -> None:
    policy(api, root, "readers", READ_DEFAULT)
    cases: list[tuple[JsonObject, str, str]] = [
        ({"Name": "bad name!", "Policies": [{"Name": "readers"}]}, "Name", "invalid name"),
        ({"Name": "r", "Policies": []}, "Policies", "at least one policy"),
        ({"Name": "r", "Policies": [{"Name": "missing"}]}, "Policies", "cannot find policy missing"),
        ({"Name": "r", "Description": "x" * 257, "Policies": [{"Name": "readers"}]}, "Description", "longer than 256"),
        ({"Name": "r", "Policies": "readers"}, "Policies", "must be a list"),
    ]
    for body, field, message in cases:
        refused = api.put("/v1/acl/role", json=body, headers=root)
        text = refused.get_data(as_text=True)
        assert refused.status_code == 400 and field in text and message in text, (body, text)
    made = role(api, root, "taken", "readers")
    duplicate = api.put("/v1/acl/role", json={"Name": "taken", "Policies": [{"Name": "readers"}]}, headers=root)
    assert duplicate.status_code == 400 and "ACL role with name taken already exists" in duplicate.get_data(
        as_text=True
    )
    mismatch = api.put(
        f"/v1/acl/role/{made['ID']}", json={"Name": "taken", "Policies": [{"Name": "readers"}]}, headers=root
    )
    assert mismatch.status_code == 400 and "does not match request path" in mismatch.get_data(as_text=True)
    unknown = str(uuid.uuid4())
    missing = api.put(
        f"/v1/acl/role/{unknown}", json={"ID": unknown, "Name": "n", "Policies": [{"Name": "readers"}]}, headers=root
    )
    assert missing.status_code == 404


def test_a_token_with_only_a_role_gets_the_roles_capabilities(api: FlaskClient, root: dict[str, str]) -> None:
    assert api.put("/v1/namespace/prod", json={"Name": "prod"}, headers=root).status_code == 200
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=root).status_code == 200
    policy(api, root, "readers", READ_DEFAULT)
    policy(api, root, "writers", WRITE_DEFAULT)
    ops = role(api, root, "ops", "readers")
    made = token(api, root, [{"ID": ops["ID"]}])
    assert made["Policies"] == [] and made["Roles"] == [{"ID": ops["ID"], "Name": "ops"}]
    holder = secret_of(made)
    assert api.get("/v1/job/web", headers=holder).status_code == 200
    assert api.get("/v1/jobs?namespace=prod", headers=holder).status_code == 403
    assert api.put("/v1/jobs", json={"Job": minimal_job("x")}, headers=holder).status_code == 403
    # The role's policies count as the token's own: it may read them, and the role itself.
    assert api.get("/v1/acl/policy/readers", headers=holder).status_code == 200
    assert api.get("/v1/acl/policy/writers", headers=holder).status_code == 403
    assert [p["Name"] for p in items(api.get("/v1/acl/policies", headers=holder))] == ["readers"]
    # A change to the role applies to its tokens at once.
    update = {"ID": ops["ID"], "Name": "ops-renamed", "Policies": [{"Name": "writers"}]}
    obj(api.put(f"/v1/acl/role/{ops['ID']}", json=update, headers=root))
    assert api.put("/v1/jobs", json={"Job": minimal_job("x")}, headers=holder).status_code == 200
    me = obj(api.get("/v1/acl/token/self", headers=holder))
    assert me["Roles"] == [{"ID": ops["ID"], "Name": "ops-renamed"}]
    # Deleting the role takes its capabilities, and its link, from the token.
    assert api.delete(f"/v1/acl/role/{ops['ID']}", headers=root).status_code == 200
    assert api.get("/v1/job/web", headers=holder).status_code == 403
    assert obj(api.get(f"/v1/acl/token/{made['AccessorID']}", headers=root))["Roles"] is None


def test_token_role_links_by_name_and_their_refusals(api: FlaskClient, root: dict[str, str]) -> None:
    policy(api, root, "readers", READ_DEFAULT)
    policy(api, root, "writers", WRITE_DEFAULT)
    ops = role(api, root, "ops", "readers")
    both = token(api, root, [{"Name": "ops"}, {"ID": ops["ID"]}], ["writers"])
    assert both["Roles"] == [{"ID": ops["ID"], "Name": "ops"}] and both["Policies"] == ["writers"]
    listed = items(api.get("/v1/acl/tokens", headers=root))
    assert {"ID": ops["ID"], "Name": "ops"} in [link for t in listed for link in (t["Roles"] or [])]  # type: ignore[union-attr]
    cases: list[tuple[JsonValue, str]] = [
        ([{"Name": "nope"}], "cannot find role nope"),
        ([{"ID": "not-a-uuid"}], "ID must be a UUID"),
        ([{}], "needs an ID or a Name"),
    ]
    for roles, message in cases:
        body: JsonObject = {"Type": "client", "Roles": roles}
        refused = api.put("/v1/acl/token", json=body, headers=root)
        assert refused.status_code == 400 and message in refused.get_data(as_text=True), message
    management = api.put("/v1/acl/token", json={"Type": "management", "Roles": [{"Name": "ops"}]}, headers=root)
    assert management.status_code == 400 and "cannot be associated with policies or roles" in management.get_data(
        as_text=True
    )
    empty = api.put("/v1/acl/token", json={"Type": "client"}, headers=root)
    assert empty.status_code == 400 and "at least one policy or role" in empty.get_data(as_text=True)
    accessor = str(both["AccessorID"])
    updated = obj(
        api.post(
            f"/v1/acl/token/{accessor}",
            json={"AccessorID": accessor, "Type": "client", "Roles": [{"Name": "ops"}]},
            headers=root,
        )
    )
    assert updated["Policies"] == [] and updated["Roles"] == [{"ID": ops["ID"], "Name": "ops"}]


def test_a_client_token_reads_and_lists_only_the_roles_it_links(api: FlaskClient, root: dict[str, str]) -> None:
    policy(api, root, "readers", READ_DEFAULT)
    mine, other = role(api, root, "mine", "readers"), role(api, root, "other", "readers")
    holder = secret_of(token(api, root, [{"ID": mine["ID"]}]))
    assert [r["Name"] for r in items(api.get("/v1/acl/roles", headers=holder))] == ["mine"]
    assert api.get(f"/v1/acl/role/{mine['ID']}", headers=holder).status_code == 200
    assert api.get("/v1/acl/role/name/mine", headers=holder).status_code == 200
    assert api.get(f"/v1/acl/role/{other['ID']}", headers=holder).status_code == 403
    assert api.get("/v1/acl/role/name/other", headers=holder).status_code == 403
    assert items(api.get("/v1/acl/roles")) == []  # anonymous links no role
    assert (
        api.put("/v1/acl/role", json={"Name": "x", "Policies": [{"Name": "readers"}]}, headers=holder).status_code
        == 403
    )
    assert api.delete(f"/v1/acl/role/{mine['ID']}", headers=holder).status_code == 403
