"""PUT /v1/acl/login with JWT auth methods (static keys and a JWKS URL served on loopback),
the binding rules that shape the minted token, the refusals (bad signature, expired, wrong
audience or issuer, nothing bound), one-time tokens, and /v1/acl/policy/self."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app.wire.json import JsonObject, JsonValue
from tests.support.acl_cli import acl_enabled_app, bootstrap, json_object
from tests.support.jwt_issuer import Issuer, serve_jwks

pytestmark = pytest.mark.integration

HOUR_NS = 3600 * 1_000_000_000


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


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


def setup_method(api: FlaskClient, root: dict[str, str], config: JsonObject, name: str = "corp") -> None:
    """A JWT method mapping `team` and `groups`, the policies/role its rules name, and the rules."""
    base: JsonObject = {
        "BoundIssuer": ["https://idp.test"],
        "BoundAudiences": ["corral"],
        "ClaimMappings": {"team": "team"},
        "ListClaimMappings": {"groups": "groups"},
    }
    method: JsonObject = {"Name": name, "Type": "JWT", "TokenLocality": "global", "MaxTokenTTL": "1h"}
    method["Config"] = {**base, **config}
    obj(api.put("/v1/acl/auth-method", json=method, headers=root))
    for policy in ("eng", "readers"):
        text = 'namespace "default" { policy = "read" }'
        assert api.put(f"/v1/acl/policy/{policy}", json={"Rules": text}, headers=root).status_code == 200
    links: list[JsonValue] = [{"Name": "readers"}]
    obj(api.put("/v1/acl/role", json={"Name": "eng-role", "Policies": links}, headers=root))
    rules: list[JsonObject] = [
        {"AuthMethod": name, "Selector": 'value.team == "eng"', "BindType": "policy", "BindName": "${value.team}"},
        {"AuthMethod": name, "Selector": '"dev" in list.groups', "BindType": "role", "BindName": "${value.team}-role"},
        {"AuthMethod": name, "Selector": '"admins" in list.groups', "BindType": "management"},
        {"AuthMethod": name, "BindType": "policy", "BindName": "no-such-policy"},  # skipped: not a policy
    ]
    for rule in rules:
        obj(api.put("/v1/acl/binding-rule", json=rule, headers=root))


def login(api: FlaskClient, token: str, method: str = "corp") -> TestResponse:
    return api.put("/v1/acl/login", json={"AuthMethodName": method, "LoginToken": token})


def test_a_login_with_a_static_key_mints_the_bound_token(
    api: FlaskClient, root: dict[str, str], issuer: Issuer
) -> None:
    setup_method(api, root, {"JWTValidationPubKeys": [issuer.public_pem]})
    made = obj(login(api, issuer.sign({"aud": "corral", "team": "eng", "groups": ["dev"]})))
    assert made["Name"] == "JWT-corp" and made["Type"] == "client" and made["Global"] is True
    assert made["Policies"] == ["eng"]  # the no-such-policy rule matched too, and was skipped
    roles = made["Roles"]
    assert isinstance(roles, list) and [r["Name"] for r in roles if isinstance(r, dict)] == ["eng-role"]
    assert made["ExpirationTTL"] == HOUR_NS and made["ExpirationTime"]
    me = obj(api.get("/v1/acl/token/self", headers={"X-Nomad-Token": str(made["SecretID"])}))
    assert me["AccessorID"] == made["AccessorID"]
    policies = api.get("/v1/acl/policy/self", headers={"X-Nomad-Token": str(made["SecretID"])}).json
    assert isinstance(policies, list) and sorted(p["Name"] for p in policies) == ["eng", "readers"]


def test_a_management_rule_mints_a_management_token(api: FlaskClient, root: dict[str, str], issuer: Issuer) -> None:
    setup_method(api, root, {"JWTValidationPubKeys": [issuer.public_pem]})
    made = obj(login(api, issuer.sign({"aud": "corral", "team": "eng", "groups": ["admins", "dev"]})))
    assert made["Type"] == "management" and made["Policies"] == [] and made["Roles"] is None


def test_a_login_verified_through_a_jwks_url(api: FlaskClient, root: dict[str, str], issuer: Issuer) -> None:
    with serve_jwks(issuer) as url:
        setup_method(api, root, {"JWKSURL": url})
        made = obj(login(api, issuer.sign({"aud": ["other", "corral"], "team": "eng"})))
        assert made["Policies"] == ["eng"] and made["Roles"] is None
        forged = Issuer(kid=issuer.kid).sign({"aud": "corral", "team": "eng"})
        assert login(api, forged).status_code == 401


@pytest.mark.parametrize(
    ("claims", "lifetime_s", "problem"),
    [
        ({"aud": "corral", "team": "eng", "exp": 1_000_000}, 0, "expired"),
        ({"aud": "someone-else", "team": "eng"}, 300, "audience"),
        ({"aud": "corral", "team": "eng", "iss": "https://evil.test"}, 300, "invalid JWT issuer"),
    ],
)
def test_logins_failing_verification_are_refused_401(
    api: FlaskClient, root: dict[str, str], issuer: Issuer, claims: JsonObject, lifetime_s: int, problem: str
) -> None:
    setup_method(api, root, {"JWTValidationPubKeys": [issuer.public_pem]})
    resp = login(api, issuer.sign(claims, lifetime_s=lifetime_s))
    assert resp.status_code == 401
    text = resp.get_data(as_text=True)
    assert "unable to validate provided token" in text and problem.lower() in text.lower()


def test_a_token_signed_by_another_key_is_refused(api: FlaskClient, root: dict[str, str], issuer: Issuer) -> None:
    setup_method(api, root, {"JWTValidationPubKeys": [issuer.public_pem]})
    resp = login(api, Issuer().sign({"aud": "corral", "team": "eng"}))
    assert resp.status_code == 401 and "Signature verification failed" in resp.get_data(as_text=True)
    assert login(api, "not-a-jwt").status_code == 401


def test_logins_that_bind_nothing_or_name_no_method_are_refused_400(
    api: FlaskClient, root: dict[str, str], issuer: Issuer
) -> None:
    setup_method(api, root, {"JWTValidationPubKeys": [issuer.public_pem]})
    nothing = login(api, issuer.sign({"aud": "corral", "groups": ["visitors"]}))
    assert nothing.status_code == 400 and "no role or policy bindings matched" in nothing.get_data(as_text=True)
    unknown = login(api, issuer.sign({"aud": "corral"}), method="nope")
    assert unknown.status_code == 400 and "auth-method 'nope' not found" in unknown.get_data(as_text=True)
    empty = api.put("/v1/acl/login", json={})
    assert empty.status_code == 400
    assert all(f in empty.get_data(as_text=True) for f in ("AuthMethodName", "LoginToken"))
    oidc: JsonObject = {"Name": "sso", "Type": "OIDC", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    oidc["Config"] = {"OIDCDiscoveryURL": "https://idp.test", "OIDCClientID": "corral"}
    obj(api.put("/v1/acl/auth-method", json=oidc, headers=root))
    unsupported = login(api, issuer.sign({"aud": "corral"}), method="sso")
    assert unsupported.status_code == 400 and "unsupported auth-method type: OIDC" in unsupported.get_data(as_text=True)


def test_a_one_time_token_is_exchanged_once_for_its_token(api: FlaskClient, root: dict[str, str]) -> None:
    created = obj(api.put("/v1/acl/token/onetime", headers=root))["OneTimeToken"]
    assert isinstance(created, dict)
    assert set(created) == {"OneTimeSecretID", "AccessorID", "ExpiresAt", "CreateIndex", "ModifyIndex"}
    body = {"OneTimeSecretID": created["OneTimeSecretID"]}
    swapped = obj(api.put("/v1/acl/token/onetime/exchange", json=body))["Token"]
    assert isinstance(swapped, dict)
    assert swapped["AccessorID"] == created["AccessorID"] and swapped["SecretID"] == root["X-Nomad-Token"]
    assert api.put("/v1/acl/token/onetime/exchange", json=body).status_code == 403  # used up
    assert api.put("/v1/acl/token/onetime").status_code == 403  # anonymous has no token to hand over
    assert api.put("/v1/acl/token/onetime/exchange", json={}).status_code == 400


def test_policy_self_of_a_management_token_lists_every_policy(api: FlaskClient, root: dict[str, str]) -> None:
    for name in ("a", "b"):
        rules = 'namespace "default" { policy = "read" }'
        assert api.put(f"/v1/acl/policy/{name}", json={"Rules": rules}, headers=root).status_code == 200
    listed = api.get("/v1/acl/policy/self", headers=root).json
    assert isinstance(listed, list) and [p["Name"] for p in listed] == ["a", "b"]
    assert api.get("/v1/acl/policy/self").status_code in (200, 403)
