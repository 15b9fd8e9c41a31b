"""OIDC logins whose auth method authenticates to the provider with an OIDCClientAssertion
(private_key_jwt) instead of its secret, against the loopback provider of
tests/support/oidc_provider.py, which verifies the assertion (signature, typ, iss/sub, aud,
exp/nbf/iat, a fresh jti, the key-naming header) and refuses a bad one: each key source
(client_secret, private_key by file with a certificate's x5t#S256 or inline with a kid, nomad
through the servers' JWKS), the refusals, and the secrets a read redacts but an update keeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app.wire.json import JsonObject, JsonValue
from tests.support.acl_cli import acl_enabled_app, bootstrap, json_object
from tests.support.assertion_keys import certificate_pem, private_pem, rsa_key, thumbprint
from tests.support.oidc_provider import CLIENT_ID, Provider, authorize, serve_provider

pytestmark = pytest.mark.integration

CALLBACK = "http://localhost:4649/oidc/callback"
NONCE = "assertion-nonce-1"
LONG_SECRET = "a-client-secret-of-forty-characters-long"


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with serve_provider() as running:
        yield running


@pytest.fixture(scope="module")
def client_key() -> rsa.RSAPrivateKey:
    return rsa_key()


@pytest.fixture
def idp(provider: Provider) -> Provider:
    provider.claims = {"sub": "alice", "team": "eng"}
    provider.userinfo = {}
    provider.token_requests.clear()
    provider.basic_auth.clear()
    provider.assertion_key = None
    provider.assertion_algorithms = ["RS256"]
    provider.assertion_audience = ""
    provider.assertion_headers = {}
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


def put_method(api: FlaskClient, root: dict[str, str], idp: Provider, assertion: JsonValue) -> TestResponse:
    method: JsonObject = {"Name": "sso", "Type": "OIDC", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    method["Config"] = {
        "OIDCDiscoveryURL": idp.issuer,
        "OIDCClientID": CLIENT_ID,
        "OIDCClientSecret": LONG_SECRET,
        "AllowedRedirectURIs": [CALLBACK],
        "ClaimMappings": {"team": "team"},
        "OIDCClientAssertion": assertion,
    }
    return api.put("/v1/acl/auth-method", json=method, headers=root)


def make_method(api: FlaskClient, root: dict[str, str], idp: Provider, assertion: JsonValue) -> None:
    json_object(put_method(api, root, idp, assertion))
    policy = {"Rules": 'namespace "default" { policy = "read" }'}
    assert api.put("/v1/acl/policy/eng", json=policy, headers=root).status_code == 200
    rule = {"AuthMethod": "sso", "Selector": 'value.team == "eng"', "BindType": "policy", "BindName": "eng"}
    json_object(api.put("/v1/acl/binding-rule", json=rule, headers=root))


def login(api: FlaskClient, nonce: str = NONCE) -> TestResponse:
    start = {"AuthMethodName": "sso", "RedirectURI": CALLBACK, "ClientNonce": nonce}
    url = json_object(api.put("/v1/acl/oidc/auth-url", json=start))["AuthURL"]
    assert isinstance(url, str)
    _, code, state = authorize(url)
    body = {"AuthMethodName": "sso", "ClientNonce": nonce, "State": state, "Code": code, "RedirectURI": CALLBACK}
    return api.put("/v1/acl/oidc/complete-auth", json=body)


def logged_in(resp: TestResponse) -> None:
    made = json_object(resp)
    assert made["Policies"] == ["eng"] and made["Name"] == "OIDC-sso"


def refused(resp: TestResponse, status: int, *words: str) -> None:
    text = resp.get_data(as_text=True)
    assert resp.status_code == status, text
    assert all(w in text for w in words), text


def sent_assertion(idp: Provider) -> str:
    """The assertion of the last token request, which carried no secret."""
    form = idp.token_requests[-1]
    assert "client_secret" not in form and not idp.basic_auth
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    return form["client_assertion"]


def test_a_client_secret_assertion_is_sent_instead_of_the_secret(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    make_method(api, root, idp, {"KeySource": "client_secret"})
    idp.assertion_key, idp.assertion_algorithms = LONG_SECRET.encode(), ["HS256"]
    logged_in(login(api))
    assert jwt.get_unverified_header(sent_assertion(idp))["alg"] == "HS256"
    idp.assertion_key = b"the-provider-knows-another-secret-entirely"
    refused(login(api, "assertion-nonce-2"), 401, "Code", "invalid_client", "Signature verification failed")


def test_a_private_key_assertion_from_a_file_names_its_certificate(
    api: FlaskClient, root: dict[str, str], idp: Provider, client_key: rsa.RSAPrivateKey, tmp_path: Path
) -> None:
    key_file = tmp_path / "client-key.pem"
    key_file.write_text(private_pem(client_key))
    cert = certificate_pem(client_key)
    private: JsonObject = {"PemKeyFile": str(key_file), "PemCert": cert}
    make_method(api, root, idp, {"KeySource": "private_key", "KeyAlgorithm": "RS384", "PrivateKey": private})
    idp.assertion_key, idp.assertion_algorithms = client_key.public_key(), ["RS384"]
    idp.assertion_headers = {"x5t#S256": thumbprint(cert)}
    logged_in(login(api))
    idp.assertion_key = rsa_key().public_key()  # the provider has another key on file for this client
    refused(login(api, "assertion-nonce-2"), 401, "invalid_client")


def test_a_key_file_gone_is_a_400_at_auth_url_and_complete_auth_which_leaves_the_login(
    api: FlaskClient, root: dict[str, str], idp: Provider, client_key: rsa.RSAPrivateKey, tmp_path: Path
) -> None:
    key_file = tmp_path / "client-key.pem"
    key_file.write_text(private_pem(client_key))
    private: JsonObject = {"PemKeyFile": str(key_file), "KeyID": "k"}
    make_method(api, root, idp, {"KeySource": "private_key", "PrivateKey": private})
    idp.assertion_key, idp.assertion_headers = client_key.public_key(), {"kid": "k"}
    start = {"AuthMethodName": "sso", "RedirectURI": CALLBACK, "ClientNonce": NONCE}
    url = json_object(api.put("/v1/acl/oidc/auth-url", json=start))["AuthURL"]
    assert isinstance(url, str)
    _, code, state = authorize(url)
    body = {"AuthMethodName": "sso", "ClientNonce": NONCE, "State": state, "Code": code, "RedirectURI": CALLBACK}
    key_file.unlink()
    refused(api.put("/v1/acl/oidc/complete-auth", json=body), 400, "PrivateKey.PemKeyFile", "error reading")
    again = {**start, "ClientNonce": "assertion-nonce-2"}
    refused(api.put("/v1/acl/oidc/auth-url", json=again), 400, "PrivateKey.PemKeyFile")  # before the browser
    key_file.write_text(private_pem(client_key))
    logged_in(api.put("/v1/acl/oidc/complete-auth", json=body))


def test_a_nomad_assertion_is_verified_with_the_servers_jwks(
    api: FlaskClient, root: dict[str, str], idp: Provider
) -> None:
    """The provider is given the servers' /.well-known/jwks.json, as it would fetch it; after a
    keyring rotation the assertion names a key that document lacks, and is refused."""
    make_method(api, root, idp, {"KeySource": "nomad", "Audience": [f"{idp.issuer}/token"]})
    assert api.put("/v1/operator/keyring/rotate", headers=root).status_code == 200
    idp.assertion_key = json_object(api.get("/.well-known/jwks.json"))
    idp.assertion_audience = f"{idp.issuer}/token"
    logged_in(login(api))
    keys = api.get("/v1/operator/keyring/keys", headers=root).get_data(as_text=True)
    assert jwt.get_unverified_header(sent_assertion(idp))["kid"] in keys
    assert api.put("/v1/operator/keyring/rotate", headers=root).status_code == 200
    refused(login(api, "assertion-nonce-2"), 401, "invalid_client", "no key")


def test_reads_redact_the_key_and_secret_and_an_update_sent_back_keeps_them(
    api: FlaskClient, root: dict[str, str], idp: Provider, client_key: rsa.RSAPrivateKey
) -> None:
    pem = private_pem(client_key)
    make_method(api, root, idp, {"KeySource": "private_key", "PrivateKey": {"PemKey": pem, "KeyID": "client-1"}})
    read = json_object(api.get("/v1/acl/auth-method/sso", headers=root))
    text = str(read)
    assert pem not in text and LONG_SECRET not in text
    config = read["Config"]
    assert isinstance(config, dict) and config["OIDCClientSecret"] == "redacted"
    assertion = config["OIDCClientAssertion"]
    assert isinstance(assertion, dict) and assertion["KeySource"] == "private_key"
    assert assertion["Audience"] == [idp.issuer] and assertion["KeyAlgorithm"] == "RS256"
    assert assertion["PrivateKey"] == {
        "PemKey": "redacted",
        "PemKeyFile": "",
        "KeyIDHeader": "kid",
        "KeyID": "client-1",
        "PemCert": "",
        "PemCertFile": "",
    }
    listed = json_object(api.put("/v1/acl/auth-method/sso", json={**read, "Default": True}, headers=root))
    assert listed["Default"] is True and pem not in str(listed)
    idp.assertion_key, idp.assertion_headers = client_key.public_key(), {"kid": "client-1"}
    logged_in(login(api))  # the stored key signed it: the update did not store the word "redacted"


@pytest.mark.parametrize(
    ("assertion", "words"),
    [
        ({"KeySource": "private_key"}, ("Config.OIDCClientAssertion.PrivateKey", "PrivateKey is required")),
        ({"KeySource": "hsm"}, ("Config.OIDCClientAssertion.KeySource", "invalid KeySource")),
        ({"KeySource": "client_secret", "KeyAlgorithm": "HS512"}, ("Config.OIDCClientSecret", "at least 64 bytes")),
    ],
)
def test_an_invalid_assertion_is_a_400_naming_its_field(
    api: FlaskClient, root: dict[str, str], idp: Provider, assertion: JsonObject, words: tuple[str, ...]
) -> None:
    refused(put_method(api, root, idp, assertion), 400, *words)
