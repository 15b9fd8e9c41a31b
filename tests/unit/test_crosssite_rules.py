"""The cross-site rules as pure functions: which Content-Types a write may carry, which Origins
may write or open an exec session, which Host names a loopback API answers, the headers every
answer gets, the settings that widen them, and that the UI's assets live within their CSP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.api.http.crosssite import (
    Arrival,
    Guard,
    bind_host,
    content_type_refusal,
    host_of,
    host_refusal,
    is_loopback_name,
    origin_allowed,
    refusal,
    response_headers,
)
from app.settings.config import Settings
from app.ui import pages

pytestmark = pytest.mark.unit
UI = Path(pages.__file__).parent
LOOPBACK = Guard.of(Settings(bind="127.0.0.1:4646"))
WILDCARD = Guard.of(Settings(bind="0.0.0.0:4646"))


def configured(**values: str) -> Settings:
    """Settings from strings, as the environment gives them (a comma-separated list), through
    the same validators."""
    return Settings.model_validate(values)


def write(
    content_type: str | None = None,
    *,
    method: str = "PUT",
    origin: str | None = None,
    host: str = "127.0.0.1:4646",
    empty: bool = False,
    upgrade: bool = False,
    scheme: str = "http",
) -> Arrival:
    return Arrival(method, scheme, host, origin, content_type, empty, upgrade)


# --- Content-Type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", [None, "", "application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_a_write_takes_json_or_no_content_type(content_type: str | None) -> None:
    assert content_type_refusal(write(content_type)) is None


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; b=x", "x/y"],
)
def test_a_write_with_any_other_content_type_is_415_naming_it(content_type: str) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        found = content_type_refusal(write(content_type, method=method))
        assert found is not None and (found.status, found.field) == (415, "Content-Type")
        assert repr(content_type) in found.message


def test_a_form_body_is_told_how_curl_sends_json() -> None:
    found = content_type_refusal(write("application/x-www-form-urlencoded"))
    assert found is not None and "-H 'Content-Type: application/json'" in found.message


def test_an_empty_body_or_a_read_carries_any_content_type() -> None:
    assert content_type_refusal(write("application/x-www-form-urlencoded", empty=True)) is None
    assert content_type_refusal(write("text/plain", method="GET")) is None


# --- Origin ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "scheme", "host"),
    [
        ("http://127.0.0.1:4646", "http", "127.0.0.1:4646"),
        ("http://LOCALHOST:4646", "http", "localhost:4646"),
        ("https://corral.example", "https", "corral.example"),
        ("https://corral.example", "https", "corral.example:443"),
        ("https://corral.example", "http", "corral.example"),  # TLS ended by a proxy that keeps Host
        ("http://[::1]:4646", "http", "[::1]:4646"),
    ],
)
def test_the_api_s_own_origin_is_allowed(origin: str, scheme: str, host: str) -> None:
    assert origin_allowed(LOOPBACK, origin, scheme, host)


@pytest.mark.parametrize(
    ("origin", "scheme", "host"),
    [
        ("http://evil.example", "http", "127.0.0.1:4646"),
        ("http://127.0.0.1:4647", "http", "127.0.0.1:4646"),  # another port is another origin
        ("http://corral.example", "https", "corral.example"),  # a plain-http page, a TLS API
        ("null", "http", "127.0.0.1:4646"),
        ("", "http", "127.0.0.1:4646"),
    ],
)
def test_other_origins_and_null_are_foreign(origin: str, scheme: str, host: str) -> None:
    assert not origin_allowed(LOOPBACK, origin, scheme, host)


def test_a_configured_origin_is_allowed() -> None:
    guard = Guard.of(configured(http_allowed_origins="http://localhost:3000/, chrome-extension://abcdef"))
    assert origin_allowed(guard, "http://localhost:3000", "http", "127.0.0.1:4646")
    assert origin_allowed(guard, "chrome-extension://abcdef", "http", "127.0.0.1:4646")
    assert not origin_allowed(guard, "http://localhost:3001", "http", "127.0.0.1:4646")


def test_a_foreign_origin_is_refused_on_writes_and_upgrades_only() -> None:
    evil = "http://evil.example"
    found = refusal(LOOPBACK, write("application/json", origin=evil))
    assert found is not None and (found.status, found.field) == (403, "Origin") and evil in found.message
    upgrade = refusal(LOOPBACK, write(method="GET", origin=evil, upgrade=True))
    assert upgrade is not None and (upgrade.status, upgrade.field) == (403, "Origin")
    assert "exec" in upgrade.message
    assert refusal(LOOPBACK, write(method="GET", origin=evil)) is None
    assert refusal(LOOPBACK, write("application/json")) is None  # no Origin: curl, the CLI, Nomad's client


# --- Host ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bind", "host"),
    [
        ("127.0.0.1:4646", "127.0.0.1"),
        ("localhost:4646", "localhost"),
        ("[::1]:4646", "::1"),
        ("0.0.0.0:4646", ""),
        ("[::]:4646", ""),
        ("10.0.0.5:4646", "10.0.0.5"),
        ("unix:/run/corral.sock", ""),
    ],
)
def test_bind_host(bind: str, host: str) -> None:
    assert bind_host(bind) == host


@pytest.mark.parametrize(
    "header",
    ["localhost", "localhost:4646", "LocalHost.:80", "ui.localhost:4646", "127.0.0.1:4646", "127.9.9.9", "[::1]:4646"],
)
def test_loopback_names_reach_a_loopback_api(header: str) -> None:
    assert is_loopback_name(host_of(header))
    assert host_refusal(LOOPBACK, header) is None


@pytest.mark.parametrize("header", ["evil.example:4646", "evil.example", "localhost.evil.example", "10.0.0.5:4646"])
def test_other_names_are_refused_by_a_loopback_api(header: str) -> None:
    found = host_refusal(LOOPBACK, header)
    assert found is not None and (found.status, found.field) == (421, "Host") and repr(header) in found.message


def test_configured_hosts_reach_a_loopback_api() -> None:
    guard = Guard.of(configured(bind="127.0.0.1:4646", http_allowed_hosts="corral.test, 10.0.0.5"))
    assert host_refusal(guard, "corral.test:4646") is None and host_refusal(guard, "10.0.0.5") is None
    assert host_refusal(guard, "evil.example:4646") is not None


def test_a_non_loopback_api_checks_hosts_only_once_configured() -> None:
    assert host_refusal(WILDCARD, "server:4646") is None  # a compose service name
    assert host_refusal(WILDCARD, "evil.example") is None
    guard = Guard.of(configured(bind="0.0.0.0:4646", http_allowed_hosts="corral.example"))
    assert host_refusal(guard, "corral.example") is None and host_refusal(guard, "localhost:4646") is None
    assert host_refusal(guard, "evil.example") is not None


def test_the_drive_by_is_refused_by_its_host_first() -> None:
    drive_by = write("text/plain", method="POST", origin="http://evil.example", host="evil.example:4646")
    found = refusal(LOOPBACK, drive_by)
    assert found is not None and found.field == "Host"


# --- settings --------------------------------------------------------------------------------


def test_allow_lists_are_comma_separated_and_normalised() -> None:
    origins, hosts = " HTTP://Tool.Example:3000/ ,", "Corral.Example., [::1]"
    settings = configured(http_allowed_origins=origins, http_allowed_hosts=hosts)
    assert settings.http_allowed_origins == ("http://tool.example:3000",)
    assert settings.http_allowed_hosts == ("corral.example", "::1")
    assert Settings().http_allowed_origins is None and Settings().http_allowed_hosts is None


def test_allow_lists_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_HTTP_ALLOWED_ORIGINS", "http://a.example,https://b.example:8443")
    monkeypatch.setenv("CORRAL_HTTP_ALLOWED_HOSTS", "corral.internal")
    settings = Settings()
    assert settings.http_allowed_origins == ("http://a.example", "https://b.example:8443")
    assert settings.http_allowed_hosts == ("corral.internal",)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("http_allowed_origins", "tool.example:3000"),
        ("http_allowed_origins", "http://tool.example/path"),
        ("http_allowed_hosts", "corral.example:4646"),
        ("http_allowed_hosts", "https://corral.example"),
    ],
)
def test_a_malformed_entry_is_refused_naming_it(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(value)):
        configured(**{field: value})


# --- headers ---------------------------------------------------------------------------------


def test_every_answer_is_nosniff_and_only_ui_pages_get_the_page_headers() -> None:
    api = response_headers("/v1/jobs")
    assert api == {"X-Content-Type-Options": "nosniff"}
    page = response_headers("/ui/jobs")
    assert page["X-Frame-Options"] == "DENY" and page["Referrer-Policy"] == "no-referrer"
    policy = dict(d.split(" ", 1) for d in page["Content-Security-Policy"].split("; "))
    assert policy["default-src"] == "'self'" and policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'none'"
    assert "unsafe" not in page["Content-Security-Policy"]


@pytest.mark.parametrize(
    "path", ["/v1/acl/token/self", "/v1/acl/token", "/v1/acl/tokens", "/v1/acl/bootstrap", "/v1/node/register"]
)
def test_answers_that_may_hold_a_secret_are_not_stored(path: str) -> None:
    assert response_headers(path)["Cache-Control"] == "no-store"


def test_the_ui_needs_nothing_its_policy_refuses() -> None:
    """No inline script, style or handler in the templates, no style attribute set by script (the
    policy has no 'unsafe-inline'), nothing evaluated from a string, no asset from elsewhere."""
    for template in (UI / "templates").rglob("*.html"):
        html = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), template
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=|javascript:", html, re.I), template
    for script in (UI / "static").glob("*.js"):
        code = script.read_text()
        assert not re.search(r"setAttribute\(\s*[\"']style|\.innerHTML|\beval\(|new Function|import\(", code), script
    h = (UI / "static" / "ui.js").read_text()
    assert 'key === "style") el.style.cssText' in h  # h({style}) goes through CSSOM, which CSP allows
