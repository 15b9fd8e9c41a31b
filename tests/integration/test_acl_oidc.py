"""PUT /v1/acl/oidc/auth-url and /v1/acl/oidc/complete-auth against a real OIDC provider on
loopback (tests/support/oidc_provider.py): the happy path with userinfo and PKCE, a login
completed by another API server, and every refusal a 4xx naming its field (redirect URI, state,
nonce, audience, expiry, client secret, unknown or non-OIDC method, a used login). Also
/.well-known/openid-configuration with and without an oidc_issuer."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app import create_app
from app.settings.config import Settings
from app.store import acl_auth as auth_store
from app.wire.json import JsonObject, JsonValue
from tests.support.acl_cli import acl_enabled_app, bootstrap, json_object
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, authorize, serve_provider

pytestmark = pytest.mark.integration

CALLBACK = "http://localhost:4649/oidc/callback"
NONCE = "client-nonce-1"


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with serve_provider() as running:
        yield running


@pytest.fixture
def idp(provider: Provider) -> Provider:
    """The module's provider, reset to a plain user for each test."""
    provider.claims = {"sub": "alice", "team": "eng"}
    provider.userinfo = {"groups": ["dev"]}
    provider.id_token_overrides = {}
    provider.token_requests.clear()
    return provider


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    yield from acl_enabled_app(database_url)


@pytest.fixture
def api(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def root(api: FlaskClient) -> dict[str, str]:
    return bootstrap(api)


def setup_oidc(api: FlaskClient, root: dict[str, str], idp: Provider, **config: JsonValue) -> None:
    """An OIDC method on the provider, mapping `team` and `groups`, and rules binding them."""
    method: JsonObject = {"Name": "sso", "Type": "OIDC", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    method["Config"] = {
        "OIDCDiscoveryURL": idp.issuer,
        "OIDCClientID": CLIENT_ID,
        "OIDCClientSecret": CLIENT_SECRET,
        "AllowedRedirectURIs": [CALLBACK],
        "OIDCScopes": ["groups"],
        "ClaimMappings": {"team": "team"},
        "ListClaimMappings": {"groups": "groups"},
        **config,
    }
    json_object(api.put("/v1/acl/auth-method", json=method, headers=root))
    rules = 'namespace "default" { policy = "read" }'
    assert api.put("/v1/acl/policy/eng", json={"Rules": rules}, headers=root).status_code == 200
    json_object(api.put("/v1/acl/role", json={"Name": "devs", "Policies": [{"Name": "eng"}]}, headers=root))
    for rule in (
        {"AuthMethod": "sso", "Selector": 'value.team == "eng"', "BindType": "policy", "BindName": "${value.team}"},
        {"AuthMethod": "sso", "Selector": '"dev" in list.groups', "BindType": "role", "BindName": "devs"},
    ):
        json_object(api.put("/v1/acl/binding-rule", json=rule, headers=root))


def auth_url(api: FlaskClient, redirect: str = CALLBACK, nonce: str = NONCE, method: str = "sso") -> TestResponse:
    return api.put(
        "/v1/acl/oidc/auth-url", json={"AuthMethodName": method, "RedirectURI": redirect, "ClientNonce": nonce}
    )


def complete(api: FlaskClient, code: str, state: str, nonce: str = NONCE, method: str = "sso") -> TestResponse:
    body = {"AuthMethodName": method, "ClientNonce": nonce, "State": state, "Code": code, "RedirectURI": CALLBACK}
    return api.put("/v1/acl/oidc/complete-auth", json=body)


def started(api: FlaskClient, nonce: str = NONCE) -> tuple[str, str]:
    """(code, state) of a login started and sent through the provider."""
    url = json_object(auth_url(api, nonce=nonce))["AuthURL"]
    assert isinstance(url, str)
    redirect, code, state = authorize(url)
    assert redirect == CALLBACK and code and state
    return code, state


def refused(resp: TestResponse, status: int, *words: str) -> None:
    text = resp.get_data(as_text=True)
    assert resp.status_code == status, text
    assert all(w in text for w in words), text


def test_a_browser_login_mints_the_token_its_claims_bind(api: FlaskClient, root: dict[str, str], idp: Provider) -> None:
    setup_oidc(api, root, idp)
    url = json_object(auth_url(api))["AuthURL"]
    assert isinstance(url, str) and url.startswith(f"{idp.issuer}/authorize?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["client_id"] == CLIENT_ID and query["redirect_uri"] == CALLBACK and query["nonce"] == NONCE
    assert query["response_type"] == "code" and query["scope"] == "openid groups" and query["state"]
    assert "code_challenge" not in query  # PKCE is off for this method
    again = json_object(auth_url(api))["AuthURL"]
    assert again == url  # the same nonce asks for the same login (Nomad's LoadOrAdd)
    _, code, state = authorize(url)
    made = json_object(complete(api, code, state))
    assert made["Name"] == "OIDC-sso" and made["Type"] == "client" and made["Global"] is False
    assert made["Policies"] == ["eng"]  # from the ID token's team
    roles = made["Roles"]  # from userinfo's groups
    assert isinstance(roles, list) and [r["Name"] for r in roles if isinstance(r, dict)] == ["devs"]
    me = json_object(api.get("/v1/acl/token/self", headers={"X-Nomad-Token": str(made["SecretID"])}))
    assert me["AccessorID"] == made["AccessorID"]
    refused(complete(api, code, state), 400, "ClientNonce", "no OIDC request found")  # the login is used up


def test_pkce_sends_a_challenge_and_the_exchange_its_verifier(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    setup_oidc(api, root, idp, OIDCEnablePKCE=True, OIDCDisableUserInfo=True)
    url = json_object(auth_url(api))["AuthURL"]
    assert isinstance(url, str)
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
    _, code, state = authorize(url)
    made = json_object(complete(api, code, state))
    assert made["Policies"] == ["eng"] and made["Roles"] is None  # no userinfo: no groups, no role
    assert idp.token_requests[-1]["code_verifier"]


def test_another_api_server_completes_the_login(
    api: FlaskClient, root: dict[str, str], idp: Provider, database_url: str
) -> None:
    setup_oidc(api, root, idp)
    code, state = started(api)
    other = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    try:
        assert json_object(complete(other.test_client(), code, state))["Policies"] == ["eng"]
    finally:
        other.extensions["corral"].close()


def test_a_redirect_uri_the_method_does_not_allow_is_refused(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    setup_oidc(api, root, idp)
    refused(auth_url(api, redirect="http://evil.test/cb"), 400, "RedirectURI", "AllowedRedirectURIs")


def test_a_callback_with_another_state_is_refused(api: FlaskClient, root: dict[str, str], idp: Provider) -> None:
    setup_oidc(api, root, idp)
    code, _ = started(api)
    refused(complete(api, code, "forged-state"), 400, "State")
    assert idp.token_requests == []  # refused before the code went to the provider


@pytest.mark.parametrize(
    ("overrides", "field", "problem"),
    [
        ({"nonce": "another-nonce"}, "ClientNonce", "nonce"),
        ({"aud": "someone-else"}, "Code", "audience"),
        ({"exp": 1_000_000}, "Code", "expired"),
        ({"exp": None}, "Code", "is missing the"),
        ({"iss": "https://evil.test"}, "Code", "issuer"),
    ],
)
def test_an_id_token_failing_verification_is_refused_401(
    api: FlaskClient, root: dict[str, str], idp: Provider, overrides: JsonObject, field: str, problem: str
) -> None:
    setup_oidc(api, root, idp)
    code, state = started(api)
    idp.id_token_overrides = overrides
    resp = complete(api, code, state)
    refused(resp, 401, field)
    assert problem in resp.get_data(as_text=True).lower()


def test_a_wrong_client_secret_fails_the_exchange(api: FlaskClient, root: dict[str, str], idp: Provider) -> None:
    setup_oidc(api, root, idp, OIDCClientSecret="wrong")
    code, state = started(api)
    refused(complete(api, code, state), 401, "Code", "failed to exchange token with provider", "invalid_client")


def test_a_login_that_binds_nothing_is_refused(api: FlaskClient, root: dict[str, str], idp: Provider) -> None:
    setup_oidc(api, root, idp)
    idp.claims = {"sub": "bob", "team": "sales"}
    idp.userinfo = {}
    code, state = started(api)
    refused(complete(api, code, state), 400, "no role or policy bindings matched")


def test_unknown_and_non_oidc_methods_and_missing_fields_are_refused(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    setup_oidc(api, root, idp)
    refused(auth_url(api, method="nope"), 400, "AuthMethodName", "'nope' not found")
    refused(complete(api, "c", "s", method="nope"), 400, "AuthMethodName", "'nope' not found")
    jwt_method: JsonObject = {"Name": "corp", "Type": "JWT", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    jwt_method["Config"] = {"JWKSURL": f"{idp.issuer}/jwks"}
    json_object(api.put("/v1/acl/auth-method", json=jwt_method, headers=root))
    refused(auth_url(api, method="corp"), 400, "AuthMethodName", "not OIDC")
    refused(complete(api, "c", "s", method="corp"), 400, "AuthMethodName", "not OIDC")
    refused(api.put("/v1/acl/oidc/auth-url", json={}), 400, "AuthMethodName", "RedirectURI", "ClientNonce")
    refused(api.put("/v1/acl/oidc/complete-auth", json={"AuthMethodName": "sso"}), 400, "State", "Code")
    refused(complete(api, "c", "s", nonce="never-started"), 400, "ClientNonce", "no OIDC request found")


def test_a_nonce_already_used_by_another_login_is_refused(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    setup_oidc(api, root, idp, AllowedRedirectURIs=[CALLBACK, "http://127.0.0.1:9999/oidc/callback"])
    json_object(auth_url(api))
    refused(auth_url(api, redirect="http://127.0.0.1:9999/oidc/callback"), 400, "ClientNonce", "nonce reuse")


def test_an_unreachable_provider_is_a_400_naming_the_discovery_url(api: FlaskClient, root: dict[str, str]) -> None:
    method: JsonObject = {"Name": "sso", "Type": "OIDC", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    method["Config"] = {
        "OIDCDiscoveryURL": "http://127.0.0.1:9",
        "OIDCClientID": CLIENT_ID,
        "AllowedRedirectURIs": [CALLBACK],
    }
    json_object(api.put("/v1/acl/auth-method", json=method, headers=root))
    refused(auth_url(api), 400, "Config.OIDCDiscoveryURL")


def test_openid_configuration_needs_an_issuer(api: FlaskClient, database_url: str) -> None:
    refused(api.get("/.well-known/openid-configuration"), 404, "OIDC Discovery endpoint disabled")
    settings = Settings(database_url=database_url, acl_enabled=True, oidc_issuer="https://corral.example/")
    app = create_app(settings, database_url)
    try:
        document = json_object(app.test_client().get("/.well-known/openid-configuration"))
    finally:
        app.extensions["corral"].close()
    assert document == {
        "issuer": "https://corral.example/",
        "jwks_uri": "https://corral.example/.well-known/jwks.json",
        "id_token_signing_alg_values_supported": ["RS256"],
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
    }


def test_logins_under_way_are_capped(
    api: FlaskClient, root: dict[str, str], idp: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup_oidc(api, root, idp)
    monkeypatch.setattr(auth_store, "MAX_OIDC_REQUESTS", 1)
    first = json_object(auth_url(api, nonce="first"))
    refused(auth_url(api, nonce="second"), 429, "ClientNonce", "too many auth requests")
    assert json_object(auth_url(api, nonce="first")) == first  # the login under way is still answered
