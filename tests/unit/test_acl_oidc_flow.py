"""The pure parts of the OIDC login: the provider URL auth-url builds (scopes, PKCE S256 per RFC
7636's example), the redirect URI check, the ID token's claim checks and the userinfo merge; the
login command's callback parsing, listen address and headless browser rule; and the issuer that
workload identities and the discovery document carry."""

from __future__ import annotations

import sys
import uuid
import webbrowser
from urllib.parse import parse_qs, urlsplit

import click
import pytest
from pydantic import ValidationError

from app.acl import oidc
from app.acl.login import LoginRefused
from app.cli.acls import oidc_callback
from app.keyring import identity
from app.keyring.identity import IdentitySpec, Subject
from app.settings.config import Settings
from app.values.errors import InvalidInput
from app.wire.json import JsonObject

pytestmark = pytest.mark.unit

PROVIDER = oidc.Provider(
    issuer="https://idp.test",
    authorization_endpoint="https://idp.test/authorize?tenant=t1",
    token_endpoint="https://idp.test/token",
    jwks_uri="https://idp.test/jwks",
    userinfo_endpoint="",
    token_auth_methods=(),
    iss_parameter=True,
)
CONFIG: JsonObject = {
    "OIDCClientID": "corral",
    "OIDCScopes": ["groups", "openid"],
    "AllowedRedirectURIs": ["http://localhost:4649/oidc/callback"],
    "OIDCDiscoveryURL": "https://idp.test",
}


def test_the_auth_url_asks_for_a_code_with_the_logins_state_nonce_and_challenge() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636 appendix B
    url = oidc.auth_url(PROVIDER, CONFIG, "http://localhost:4649/oidc/callback", "st", "nc", verifier)
    assert url.startswith("https://idp.test/authorize?tenant=t1&")  # the endpoint's own query is kept
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["scope"] == "openid groups"  # openid first, once
    assert (query["state"], query["nonce"], query["client_id"], query["response_type"]) == (
        "st",
        "nc",
        "corral",
        "code",
    )
    assert query["code_challenge"] == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    assert query["code_challenge_method"] == "S256"
    plain = oidc.auth_url(PROVIDER, CONFIG, "http://localhost:4649/oidc/callback", "st", "nc", None)
    assert "code_challenge" not in plain
    assert len(oidc.new_code_verifier()) >= 43 and oidc.new_state() != oidc.new_state()


def test_only_allowed_redirect_uris_pass() -> None:
    oidc.check_redirect(CONFIG, "http://localhost:4649/oidc/callback")
    with pytest.raises(InvalidInput) as refused:
        oidc.check_redirect(CONFIG, "http://localhost:4649/other")
    assert refused.value.problems[0].field == "RedirectURI"


def test_a_provider_sending_iss_to_the_callback_must_send_its_own() -> None:
    oidc.check_callback_issuer(PROVIDER, CONFIG, "https://idp.test")
    for wrong in ("", "https://evil.test"):
        with pytest.raises(InvalidInput):
            oidc.check_callback_issuer(PROVIDER, CONFIG, wrong)


@pytest.mark.parametrize(
    ("claims", "config", "field"),
    [
        ({"sub": "a", "nonce": "other", "aud": "corral"}, {}, "ClientNonce"),
        ({"sub": "a", "nonce": "n", "aud": "corral"}, {"BoundAudiences": ["api"]}, "Code"),
        ({"sub": "a", "nonce": "n", "aud": ["corral", "api"], "azp": "api"}, {}, "Code"),
        ({"nonce": "n", "aud": "corral"}, {}, "Code"),  # no subject
    ],
)
def test_id_token_claims_are_checked(claims: JsonObject, config: JsonObject, field: str) -> None:
    with pytest.raises(LoginRefused) as refused:
        oidc._check_claims(claims, config, "corral", "n")
    assert refused.value.problems[0].field == field


def test_id_token_claims_that_pass() -> None:
    claims: JsonObject = {"sub": "a", "nonce": "n", "aud": ["corral", "api"], "azp": "corral"}
    oidc._check_claims(claims, {"BoundAudiences": ["api"]}, "corral", "n")


def test_userinfo_claims_merge_over_the_id_tokens_but_never_iss_or_sub() -> None:
    merged = oidc.merged_claims({"iss": "i", "sub": "s", "team": "a"}, {"sub": "x", "iss": "y", "team": "b", "g": [1]})
    assert merged == {"iss": "i", "sub": "s", "team": "b", "g": [1]}


def test_the_callback_reads_code_state_iss_or_the_providers_error() -> None:
    got = oidc_callback._callback_of({"code": ["c"], "state": ["s"], "iss": ["i"]})
    assert got == oidc_callback.Callback(code="c", state="s", iss="i")
    failed = oidc_callback._callback_of({"error": ["access_denied"], "error_description": ["user said no"]})
    assert failed.error == "access_denied: user said no" and not failed.code


@pytest.mark.parametrize("addr", ["localhost", "localhost:", ":4649", "host:99999", "host:port"])
def test_a_callback_address_needs_a_host_and_a_port(addr: str) -> None:
    with pytest.raises(click.ClickException):
        oidc_callback._listen_address(addr)


def test_callback_addresses_that_parse() -> None:
    assert oidc_callback._listen_address("localhost:4649") == ("localhost", 4649)
    assert oidc_callback._listen_address("[::1]:4649") == ("::1", 4649)


def test_no_browser_is_launched_without_a_graphical_session(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    def fake_open(url: str, new: int = 0, autoraise: bool = True) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert oidc_callback.open_browser("https://idp.test/a") is False and opened == []
    monkeypatch.setenv("DISPLAY", ":0")
    assert oidc_callback.open_browser("https://idp.test/b") is True and opened == ["https://idp.test/b"]


def test_workload_identities_carry_the_configured_issuer() -> None:
    subject = Subject("global", "default", "web", "g", "t", str(uuid.uuid4()))
    assert identity.claims(subject, IdentitySpec(), 1000, "https://corral.example")["iss"] == "https://corral.example"
    assert "iss" not in identity.claims(subject, IdentitySpec(), 1000)


def test_the_issuer_setting_must_be_an_http_url() -> None:
    assert Settings(oidc_issuer="https://corral.example").oidc_issuer == "https://corral.example"
    with pytest.raises(ValidationError):
        Settings(oidc_issuer="corral.example")
