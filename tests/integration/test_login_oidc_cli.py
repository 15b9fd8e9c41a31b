"""`corral login` through an OIDC auth method, end to end over real HTTP: the command's
callback server, /v1/acl/oidc/auth-url, the provider's authorize endpoint (followed with httpx,
as a browser would follow it: it redirects straight to the callback with a code), and
/v1/acl/oidc/complete-auth. Headless (no DISPLAY) the command prints the URL instead of opening
a browser, and the test plays the user who visits it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from app.cli.acls import oidc_callback
from app.wire.json import JsonObject
from tests.support.acl_cli import acl_enabled_api, field, json_object
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, serve_provider
from tests.support.processes import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def api(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlaskClient]:
    yield from acl_enabled_api(database_url, monkeypatch)


@pytest.fixture
def idp() -> Iterator[Provider]:
    with serve_provider() as running:
        running.claims = {"sub": "alice", "team": "eng"}
        yield running


def run(*args: str, token: str = "") -> Result:
    return CliRunner().invoke(main, list(args), env={"CORRAL_TOKEN": token} if token else {})


def setup_method(api: FlaskClient, idp: Provider, callback: str, client_id: str = CLIENT_ID) -> str:
    """The root token's secret, after an OIDC method `sso` binding team eng to policy eng."""
    root = field(run("acl", "bootstrap").output, "Secret ID")
    headers = {"X-Nomad-Token": root}
    method: JsonObject = {"Name": "sso", "Type": "OIDC", "TokenLocality": "local", "MaxTokenTTL": "1h"}
    method["Config"] = {
        "OIDCDiscoveryURL": idp.issuer,
        "OIDCClientID": client_id,
        "OIDCClientSecret": CLIENT_SECRET,
        "AllowedRedirectURIs": [callback],
        "ClaimMappings": {"team": "team"},
    }
    json_object(api.put("/v1/acl/auth-method", json=method, headers=headers))
    policy = 'namespace "default" { policy = "read" }'
    assert api.put("/v1/acl/policy/eng", json={"Rules": policy}, headers=headers).status_code == 200
    rule = {"AuthMethod": "sso", "Selector": 'value.team == "eng"', "BindType": "policy", "BindName": "eng"}
    json_object(api.put("/v1/acl/binding-rule", json=rule, headers=headers))
    return root


def visit(url: str, pages: list[str]) -> None:
    """A browser following the provider's URL to the login's callback page."""
    pages.append(httpx.get(url, follow_redirects=True, timeout=10).text)


def test_login_runs_the_browser_flow_and_prints_the_token(
    api: FlaskClient, idp: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    addr = f"127.0.0.1:{free_port()}"
    setup_method(api, idp, f"http://{addr}/oidc/callback")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    pages: list[str] = []
    urls: list[str] = []
    users: list[threading.Thread] = []
    real_open = oidc_callback.open_browser

    def headless_user(url: str) -> bool:
        opened = real_open(url)  # no graphical session: nothing may be launched
        urls.append(url)
        users.append(threading.Thread(target=visit, args=(url, pages)))  # the user visits the printed URL
        users[-1].start()
        return opened

    monkeypatch.setattr(oidc_callback, "open_browser", headless_user)
    done = run("login", "-method", "sso", "-oidc-callback-addr", addr)
    for user in users:
        user.join()
    assert done.exit_code == 0, done.output
    assert "please visit your provider using the URL below" in done.stderr and urls[0] in done.stderr
    assert urls[0].startswith(f"{idp.issuer}/authorize?")
    assert "Successfully logged in via OIDC and sso" in done.stdout
    assert field(done.stdout, "Policies") == "eng" and field(done.stdout, "Name") == "OIDC-sso"
    assert "Signed in via your OIDC provider" in pages[0]
    me = run("acl", "token", "self", token=field(done.stdout, "Secret ID"))
    assert me.exit_code == 0 and field(me.output, "Name") == "OIDC-sso"


def test_a_login_the_provider_refuses_fails_naming_its_error(
    api: FlaskClient, idp: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    addr = f"127.0.0.1:{free_port()}"
    setup_method(api, idp, f"http://{addr}/oidc/callback", client_id="unknown-client")
    pages: list[str] = []

    def browser(url: str) -> bool:
        visit(url, pages)
        return True

    monkeypatch.setattr(oidc_callback, "open_browser", browser)
    done = run("login", "-method", "sso", "-oidc-callback-addr", addr, "-json")
    assert done.exit_code != 0
    assert "the provider refused it: unauthorized_client" in done.output
    assert "Login failed: unauthorized_client" in pages[0]


def test_a_bad_callback_address_is_refused_before_any_request(api: FlaskClient, idp: Provider) -> None:
    setup_method(api, idp, "http://localhost:4649/oidc/callback")
    done = run("login", "-method", "sso", "-oidc-callback-addr", "no-port")
    assert done.exit_code != 0 and "want <IP>:<PORT>" in done.output
