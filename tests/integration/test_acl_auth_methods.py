"""ACL auth methods and binding rules over the HTTP API with ACLs on: Nomad's shapes, the
management requirement, validation naming fields, and the cascade from a method to its rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app.wire.json import JsonObject
from tests.support.acl_cli import acl_enabled_app, bootstrap, json_object
from tests.support.jwt_issuer import Issuer

pytestmark = pytest.mark.integration

PUBLIC_KEY = Issuer().public_pem


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    yield from acl_enabled_app(database_url)


@pytest.fixture
def api(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def root(api: FlaskClient) -> dict[str, str]:
    return bootstrap(api)


obj = json_object


def method_body(method: str = "corp", extra: JsonObject | None = None) -> JsonObject:
    body: JsonObject = {
        "Name": method,
        "Type": "JWT",
        "TokenLocality": "local",
        "MaxTokenTTL": "1h",
        "Config": {"JWTValidationPubKeys": [PUBLIC_KEY], "ClaimMappings": {"team": "team"}},
    }
    body.update(extra or {})
    return body


def client_token(api: FlaskClient, root: dict[str, str]) -> dict[str, str]:
    rules = 'namespace "default" { policy = "read" }'
    assert api.put("/v1/acl/policy/readers", json={"Name": "readers", "Rules": rules}, headers=root).status_code == 200
    made = obj(api.put("/v1/acl/token", json={"Name": "c", "Type": "client", "Policies": ["readers"]}, headers=root))
    return {"X-Nomad-Token": str(made["SecretID"])}


def test_an_auth_method_is_created_read_listed_updated_and_deleted(api: FlaskClient, root: dict[str, str]) -> None:
    made = obj(api.put("/v1/acl/auth-method", json=method_body(extra={"Default": True}), headers=root))
    assert made["Name"] == "corp" and made["Type"] == "JWT" and made["Default"] is True
    assert made["MaxTokenTTL"] == "1h0m0s"
    assert made["TokenNameFormat"] == "${auth_method_type}-${auth_method_name}"
    config = made["Config"]
    assert isinstance(config, dict)
    assert config["JWTValidationPubKeys"] == [PUBLIC_KEY] and config["ClaimMappings"] == {"team": "team"}
    assert config["ExpirationLeeway"] == "0s" and config["BoundAudiences"] == []
    listed = api.get("/v1/acl/auth-methods")  # public: the sign-in page lists methods
    assert listed.status_code == 200
    assert listed.json == [
        {
            "Name": "corp",
            "Type": "JWT",
            "Default": True,
            "Hash": made["Hash"],
            "CreateIndex": made["CreateIndex"],
            "ModifyIndex": made["ModifyIndex"],
        }
    ]
    assert obj(api.get("/v1/acl/auth-method/corp", headers=root)) == made
    changed = obj(api.put("/v1/acl/auth-method/corp", json=method_body(extra={"MaxTokenTTL": "2h"}), headers=root))
    assert changed["MaxTokenTTL"] == "2h0m0s" and changed["Hash"] != made["Hash"]
    assert changed["CreateIndex"] == made["CreateIndex"] and changed["ModifyIndex"] != made["ModifyIndex"]
    assert api.delete("/v1/acl/auth-method/corp", headers=root).status_code == 200
    assert api.get("/v1/acl/auth-method/corp", headers=root).status_code == 404


def test_auth_method_writes_and_reads_need_a_management_token(api: FlaskClient, root: dict[str, str]) -> None:
    reader = client_token(api, root)
    assert api.put("/v1/acl/auth-method", json=method_body(), headers=reader).status_code == 403
    obj(api.put("/v1/acl/auth-method", json=method_body(), headers=root))
    assert api.get("/v1/acl/auth-method/corp", headers=reader).status_code == 403
    assert api.delete("/v1/acl/auth-method/corp", headers=reader).status_code == 403
    assert api.get("/v1/acl/binding-rules", headers=reader).status_code == 403
    rule = {"AuthMethod": "corp", "BindType": "policy", "BindName": "readers"}
    assert api.put("/v1/acl/binding-rule", json=rule, headers=reader).status_code == 403


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"Name": "no spaces"}, "Name"),
        ({"Type": "LDAP"}, "Type"),
        ({"TokenLocality": "region"}, "TokenLocality"),
        ({"MaxTokenTTL": "1s"}, "MaxTokenTTL"),
        ({"MaxTokenTTL": "soon"}, "MaxTokenTTL"),
        ({"Config": {"JWKSURL": "http://x", "JWTValidationPubKeys": [PUBLIC_KEY]}}, "Config"),
        ({"Config": {"BoundAudiences": "one", "JWKSURL": "http://x"}}, "Config.BoundAudiences"),
        ({"Config": {"JWTValidationPubKeys": ["not a key"]}}, "Config.JWTValidationPubKeys[0]"),
        ({"Type": "OIDC", "Config": {"OIDCDiscoveryURL": "http://x"}}, "Config.OIDCClientID"),
    ],
)
def test_invalid_auth_methods_are_refused_naming_the_field(
    api: FlaskClient, root: dict[str, str], override: JsonObject, field: str
) -> None:
    resp = api.put("/v1/acl/auth-method", json=method_body(extra=override), headers=root)
    assert resp.status_code == 400
    assert field in resp.get_data(as_text=True)


def test_only_one_default_method_per_type(api: FlaskClient, root: dict[str, str]) -> None:
    obj(api.put("/v1/acl/auth-method", json=method_body("a", {"Default": True}), headers=root))
    resp = api.put("/v1/acl/auth-method", json=method_body("b", {"Default": True}), headers=root)
    assert resp.status_code == 400 and "default method for type JWT already exists: a" in resp.get_data(as_text=True)


def test_binding_rules_lifecycle_merge_and_cascade(api: FlaskClient, root: dict[str, str]) -> None:
    missing = api.put("/v1/acl/binding-rule", json={"AuthMethod": "corp", "BindType": "management"}, headers=root)
    assert missing.status_code == 400 and "ACL auth method corp not found" in missing.get_data(as_text=True)
    obj(api.put("/v1/acl/auth-method", json=method_body(), headers=root))
    body: JsonObject = {
        "Description": "engineers",
        "AuthMethod": "corp",
        "Selector": 'value.team == "eng"',
        "BindType": "role",
        "BindName": "eng-${value.team}",
    }
    rule = obj(api.put("/v1/acl/binding-rule", json=body, headers=root))
    rule_id = str(rule["ID"])
    assert {k: rule[k] for k in body} == body
    assert obj(api.get(f"/v1/acl/binding-rule/{rule_id}", headers=root)) == rule
    listed = api.get("/v1/acl/binding-rules", headers=root).json
    assert isinstance(listed, list) and [r["ID"] for r in listed] == [rule_id]
    assert set(listed[0]) == {"ID", "Description", "AuthMethod", "Hash", "CreateIndex", "ModifyIndex"}
    updated = obj(api.put(f"/v1/acl/binding-rule/{rule_id}", json={"ID": rule_id, "BindName": "ops"}, headers=root))
    assert updated["BindName"] == "ops" and updated["Selector"] == body["Selector"]  # merged onto the stored rule
    moved = api.put(f"/v1/acl/binding-rule/{rule_id}", json={"AuthMethod": "other"}, headers=root)
    assert moved.status_code == 400 and "cannot update auth method" in moved.get_data(as_text=True)
    assert api.delete("/v1/acl/auth-method/corp", headers=root).status_code == 200
    assert api.get(f"/v1/acl/binding-rule/{rule_id}", headers=root).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"AuthMethod": "corp", "BindType": "group", "BindName": "x"}, "BindType"),
        ({"AuthMethod": "corp", "BindType": "policy"}, "BindName"),
        ({"BindType": "management"}, "AuthMethod"),
        ({"AuthMethod": "corp", "BindType": "management", "Selector": "value.x =="}, "Selector"),
        ({"AuthMethod": "corp", "BindType": "management", "Description": "d" * 257}, "Description"),
    ],
)
def test_invalid_binding_rules_are_refused_naming_the_field(
    api: FlaskClient, root: dict[str, str], body: JsonObject, field: str
) -> None:
    obj(api.put("/v1/acl/auth-method", json=method_body(), headers=root))
    resp = api.put("/v1/acl/binding-rule", json=body, headers=root)
    assert resp.status_code == 400
    assert field in resp.get_data(as_text=True)
