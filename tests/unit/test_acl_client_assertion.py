"""An OIDC auth method's OIDCClientAssertion (private_key_jwt): what create/update accept and
refuse (each refusal names its field, as Nomad's Validate and its upsert's trial build), the
defaults Nomad fills in, the JWT built for each key source (decoded here with the key that must
verify it), and the secrets a read redacts and an update sent back keeps."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from app.acl import client_assertion
from app.acl.auth_methods import MethodSpec, config_json, method_spec, with_stored_secrets
from app.cli.acls.auth_method import render_method
from app.values.errors import InvalidInput
from app.wire.json import JsonObject, JsonValue
from tests.support.assertion_keys import certificate_pem, private_pem, rsa_key, thumbprint

pytestmark = pytest.mark.unit

DISCOVERY = "https://idp.example.com"
CLIENT_ID = "corral"
LONG_SECRET = "s" * 40  # HS256 wants at least 32 bytes
NOW = 1_700_000_000  # in the past: the decoder checks iat and nbf, not exp


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa_key()


def spec(assertion: JsonValue, **config: JsonValue) -> MethodSpec:
    body: JsonObject = {
        "Name": "sso",
        "Type": "OIDC",
        "TokenLocality": "local",
        "MaxTokenTTL": "1h",
        "Config": {"OIDCDiscoveryURL": DISCOVERY, "OIDCClientID": CLIENT_ID, **config},
    }
    assert isinstance(body["Config"], dict)
    body["Config"]["OIDCClientAssertion"] = assertion
    return method_spec(body, 60, 86400)


def refusal(assertion: JsonValue, **config: JsonValue) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        spec(assertion, **config)
    return {p.field: p.message for p in caught.value.problems}


def stored(made: MethodSpec) -> JsonObject:
    found = made.config["OIDCClientAssertion"]
    assert isinstance(found, dict)
    return found


def test_no_assertion_is_stored_as_none_and_served_as_null() -> None:
    made = spec(None, OIDCClientSecret="x")
    assert made.config["OIDCClientAssertion"] is None
    assert config_json(made.config)["OIDCClientAssertion"] is None
    shown = render_method(json.loads(json.dumps({"Name": "sso", "Config": config_json(made.config)})))
    assert "OIDC Client Secret" in shown and "OIDC Client Assertion" not in shown


def test_auth_method_info_shows_the_assertion_as_nomads_does() -> None:
    made = spec({"KeySource": "nomad", "ExtraHeaders": {"x-env": "prod"}})
    shown = render_method(json.loads(json.dumps({"Name": "sso", "Config": config_json(made.config)})))
    lines = {line.split("=")[0].strip(): line.split("=", 1)[1].strip() for line in shown.splitlines() if "=" in line}
    assert lines["OIDC Client Assertion KeySource"] == "nomad"
    assert lines["OIDC Client Assertion Algorithm"] == "RS256"
    assert lines["OIDC Client Assertion Audience"] == DISCOVERY
    assert lines["OIDC Client Assertion Headers"] == "{x-env: prod}"


def test_nomads_defaults_are_filled_in(key: rsa.RSAPrivateKey) -> None:
    """Audience: the discovery URL; algorithm: HS256 for the secret, RS256 for RSA keys; the
    key's header: `kid` for a KeyID, `x5t#S256` for a certificate."""
    by_secret = stored(spec({"KeySource": "client_secret"}, OIDCClientSecret=LONG_SECRET))
    assert by_secret["Audience"] == [DISCOVERY] and by_secret["KeyAlgorithm"] == "HS256"
    by_nomad = stored(spec({"KeySource": "nomad", "Audience": ["https://aud"]}))
    assert by_nomad["Audience"] == ["https://aud"] and by_nomad["KeyAlgorithm"] == "RS256"
    pem = private_pem(key)
    by_kid = stored(spec({"KeySource": "private_key", "PrivateKey": {"PemKey": pem, "KeyID": "k1"}}))
    assert isinstance(by_kid["PrivateKey"], dict) and by_kid["PrivateKey"]["KeyIDHeader"] == "kid"
    cert = certificate_pem(key)
    by_cert = stored(spec({"KeySource": "private_key", "PrivateKey": {"PemKey": pem, "PemCert": cert}}))
    assert isinstance(by_cert["PrivateKey"], dict) and by_cert["PrivateKey"]["KeyIDHeader"] == "x5t#S256"


PREFIX = "Config.OIDCClientAssertion"


def test_the_shape_is_checked_field_by_field() -> None:
    """Each field's JSON type is checked; a field Nomad's structs lack is ignored (Go's decoder
    ignores it), as ClientSecret is, which the server fills from OIDCClientSecret."""
    found = refusal({"KeySource": 1, "Audience": "x", "ExtraHeaders": {"a": 1}, "PrivateKey": "k", "Other": 1})
    assert set(found) == {f"{PREFIX}.KeySource", f"{PREFIX}.Audience", f"{PREFIX}.ExtraHeaders", f"{PREFIX}.PrivateKey"}
    found = refusal({"KeySource": "private_key", "PrivateKey": {"PemKey": 1, "KeyID": "k"}})
    assert "must be a string" in found[f"{PREFIX}.PrivateKey.PemKey"]
    assert "must be an object" in refusal("nomad")[PREFIX]


@pytest.mark.parametrize(
    ("assertion", "config", "field", "words"),
    [
        ({}, {}, "KeySource", "invalid KeySource ''"),
        ({"KeySource": "vault"}, {}, "KeySource", "invalid KeySource 'vault'"),
        ({"KeySource": "nomad", "KeyAlgorithm": "RS512"}, {}, "KeyAlgorithm", "RS256 only"),
        ({"KeySource": "nomad", "ExtraHeaders": {"kid": "x"}}, {}, "ExtraHeaders", "PrivateKey.KeyID"),
        ({"KeySource": "client_secret"}, {}, "Config.OIDCClientSecret", "is required for `client_secret`"),
        ({"KeySource": "client_secret"}, {"OIDCClientSecret": "short"}, "Config.OIDCClientSecret", "at least 32"),
        (
            {"KeySource": "client_secret", "KeyAlgorithm": "HS512"},
            {"OIDCClientSecret": LONG_SECRET},
            "Config.OIDCClientSecret",
            "at least 64",
        ),
        (
            {"KeySource": "client_secret", "KeyAlgorithm": "RS256"},
            {"OIDCClientSecret": LONG_SECRET},
            "KeyAlgorithm",
            "HS256, HS384 or HS512",
        ),
        ({"KeySource": "private_key"}, {}, "PrivateKey", "PrivateKey is required"),
        ({"KeySource": "private_key", "PrivateKey": {"KeyID": "k"}}, {}, "PrivateKey", "missing PemKey or PemKeyFile"),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKey": "x", "PemKeyFile": "/k", "KeyID": "k"}},
            {},
            "PrivateKey",
            "only one of PemKey or PemKeyFile",
        ),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKeyFile": "key.pem", "KeyID": "k"}},
            {},
            "PrivateKey.PemKeyFile",
            "must be absolute",
        ),
        ({"KeySource": "private_key", "PrivateKey": {"PemKey": "x"}}, {}, "PrivateKey", "missing PemCert"),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKey": "x", "KeyID": "k", "PemCertFile": "/c"}},
            {},
            "PrivateKey",
            "only one of PemCert, PemCertFile, or KeyID",
        ),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKey": "x", "KeyID": "k", "KeyIDHeader": "x5t"}},
            {},
            "PrivateKey.KeyIDHeader",
            'must be "kid"',
        ),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKey": "x", "PemCert": "c", "KeyIDHeader": "kid"}},
            {},
            "PrivateKey.KeyIDHeader",
            "certificate-derived",
        ),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKey": "not a key", "KeyID": "k"}},
            {},
            "PrivateKey.PemKey",
            "error parsing PemKey",
        ),
        (
            {"KeySource": "private_key", "PrivateKey": {"PemKeyFile": "/nonexistent/key.pem", "KeyID": "k"}},
            {},
            "PrivateKey.PemKeyFile",
            "error reading PemKeyFile",
        ),
    ],
)
def test_an_invalid_assertion_is_refused_naming_its_field(
    assertion: JsonObject, config: JsonObject, field: str, words: str
) -> None:
    found = refusal(assertion, **config)
    name = field if field.startswith("Config.OIDCClientSecret") else f"{PREFIX}.{field}"
    assert name in found, found
    assert words in found[name]


def test_only_rsa_keys_sign_as_nomads_private_key_source(key: rsa.RSAPrivateKey) -> None:
    """Nomad parses the key as RSA and signs RS256/384/512 only (cap's RSAlgorithm)."""
    ec_pem = private_pem(ec.generate_private_key(ec.SECP256R1()))
    found = refusal({"KeySource": "private_key", "PrivateKey": {"PemKey": ec_pem, "KeyID": "k"}})
    assert "not an RSA private key" in found[f"{PREFIX}.PrivateKey.PemKey"]
    pem = private_pem(key)
    found = refusal({"KeySource": "private_key", "KeyAlgorithm": "ES256", "PrivateKey": {"PemKey": pem, "KeyID": "k"}})
    assert "RS256, RS384 or RS512" in found[f"{PREFIX}.KeyAlgorithm"]


def test_a_certificate_out_of_its_validity_is_refused(key: rsa.RSAPrivateKey) -> None:
    expired = certificate_pem(key, starts=timedelta(days=-10), days=5)
    found = refusal({"KeySource": "private_key", "PrivateKey": {"PemKey": private_pem(key), "PemCert": expired}})
    assert "expired or is not yet valid" in found[f"{PREFIX}.PrivateKey.PemCert"]


def claims_of(token: str, key: rsa.RSAPublicKey | bytes, algorithm: str, audience: str = DISCOVERY) -> JsonObject:
    decoded: JsonObject = jwt.decode(
        token, key, algorithms=[algorithm], audience=audience, issuer=CLIENT_ID, options={"verify_exp": False}
    )
    return decoded


def test_a_client_secret_assertion_is_an_hmac_of_the_secret() -> None:
    made = spec({"KeySource": "client_secret", "KeyAlgorithm": "HS384"}, OIDCClientSecret="h" * 48)
    token = client_assertion.build(made.config, None, NOW)
    claims = claims_of(token, b"h" * 48, "HS384")
    assert claims["sub"] == CLIENT_ID and claims["aud"] == DISCOVERY
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (NOW, NOW - 1, NOW + 300)
    assert isinstance(claims["jti"], str) and uuid.UUID(claims["jti"])
    assert jwt.get_unverified_header(token) == {"alg": "HS384", "typ": "JWT"}
    again = claims_of(client_assertion.build(made.config, None, NOW), b"h" * 48, "HS384")
    assert again["jti"] != claims["jti"]  # each assertion is used once
    with pytest.raises(jwt.InvalidSignatureError):
        claims_of(token, b"x" * 48, "HS384")


def test_a_private_key_assertion_names_its_key_by_kid_or_certificate(key: rsa.RSAPrivateKey, tmp_path: Path) -> None:
    key_file = tmp_path / "client.pem"
    key_file.write_text(private_pem(key))
    by_kid = spec(
        {
            "KeySource": "private_key",
            "KeyAlgorithm": "RS512",
            "Audience": ["https://a", "https://b"],
            "ExtraHeaders": {"x-extra": "1"},
            "PrivateKey": {"PemKeyFile": str(key_file), "KeyID": "client-key-1"},
        }
    )
    token = client_assertion.build(by_kid.config, None, NOW)
    assert jwt.get_unverified_header(token) == {"alg": "RS512", "typ": "JWT", "kid": "client-key-1", "x-extra": "1"}
    assert claims_of(token, key.public_key(), "RS512", audience="https://b")["aud"] == ["https://a", "https://b"]
    cert = certificate_pem(key)
    one_line = private_pem(key).replace("\n", "")  # a one-line paste: Nomad puts the newlines back
    for header, sha256 in (("x5t#S256", True), ("x5t", False)):
        by_cert = spec(
            {"KeySource": "private_key", "PrivateKey": {"PemKey": one_line, "PemCert": cert, "KeyIDHeader": header}}
        )
        token = client_assertion.build(by_cert.config, None, NOW)
        assert jwt.get_unverified_header(token)[header] == thumbprint(cert, sha256=sha256)
        assert claims_of(token, key.public_key(), "RS256")["sub"] == CLIENT_ID


def test_a_nomad_assertion_is_signed_by_the_keyring_key_it_names(key: rsa.RSAPrivateKey) -> None:
    made = spec({"KeySource": "nomad"})
    key_id = uuid.uuid4()
    token = client_assertion.build(made.config, client_assertion.NomadKey(key_id, key), NOW)
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "typ": "JWT", "kid": str(key_id)}
    assert claims_of(token, key.public_key(), "RS256")["iss"] == CLIENT_ID
    with pytest.raises(client_assertion.AssertionProblem):
        client_assertion.build(made.config, None, NOW)


def test_reads_redact_the_secrets_and_an_update_sent_back_keeps_them(key: rsa.RSAPrivateKey) -> None:
    pem = private_pem(key)
    made = spec(
        {"KeySource": "private_key", "PrivateKey": {"PemKey": pem, "KeyID": "k1"}}, OIDCClientSecret=LONG_SECRET
    )
    served = config_json(made.config)
    assert served["OIDCClientSecret"] == "redacted"
    assertion = served["OIDCClientAssertion"]
    assert assertion is not None and assertion["ClientSecret"] == "redacted"
    assert assertion["PrivateKey"] is not None and assertion["PrivateKey"]["PemKey"] == "redacted"
    assert pem not in str(served) and LONG_SECRET not in str(served)
    read_back: JsonObject = json.loads(json.dumps({"Name": "sso", "Config": served}))  # as `update` sends it
    restored = with_stored_secrets(read_back, made.config)
    config = restored["Config"]
    assert isinstance(config, dict) and config["OIDCClientSecret"] == LONG_SECRET
    again = config["OIDCClientAssertion"]
    assert isinstance(again, dict) and isinstance(again["PrivateKey"], dict) and again["PrivateKey"]["PemKey"] == pem
    new_secret = with_stored_secrets({"Config": {"OIDCClientSecret": "new"}}, made.config)["Config"]
    assert isinstance(new_secret, dict) and new_secret["OIDCClientSecret"] == "new"  # a new value replaces it
