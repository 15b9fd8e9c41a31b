"""`corral ui -authenticate`: the URL carries a one-time token (`?ott=`) made with the CLI's
token, which exchanges once for that token; without a token or without ACLs the command fails
(exit 1) naming the one-time token."""

from __future__ import annotations

import webbrowser
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.acl_cli import acl_enabled_api, bootstrap, json_object
from tests.support.api import minimal_job

pytestmark = pytest.mark.integration
BASE = "http://corral.test"


@pytest.fixture
def api(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlaskClient]:
    yield from acl_enabled_api(database_url, monkeypatch)


@pytest.fixture
def management(api: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> str:
    """The bootstrap token's secret, which the CLI then uses."""
    secret = bootstrap(api)["X-Nomad-Token"]
    monkeypatch.setenv("CORRAL_TOKEN", secret)
    return secret


def cli(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


def exchanged(api: FlaskClient, ott: str) -> tuple[int, str]:
    """The exchange's status and, on success, the secret it handed back."""
    resp = api.post("/v1/acl/token/onetime/exchange", json={"OneTimeSecretID": ott})
    if resp.status_code != 200:
        return resp.status_code, ""
    token = json_object(resp)["Token"]
    assert isinstance(token, dict)
    return 200, str(token["SecretID"])


def test_show_url_carries_a_one_time_token_that_exchanges_for_the_cli_token(api: FlaskClient, management: str) -> None:
    headers = {"X-Nomad-Token": management}
    assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=headers).status_code == 200
    result = cli("ui", "-authenticate", "-show-url", "web")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"URL for web UI: {BASE}/ui/job/web?namespace=default&ott="), result.output
    url = urlsplit(result.output.removeprefix("URL for web UI: ").strip())
    [ott] = parse_qs(url.query)["ott"]
    assert ott != management
    assert exchanged(api, ott) == (200, management)
    assert exchanged(api, ott)[0] == 403  # one time only


def test_opening_prints_the_url_without_the_secret(
    api: FlaskClient, management: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []

    def fake_open(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    result = cli("ui", "-authenticate")
    assert result.exit_code == 0, result.output
    assert result.output == f'Opening URL "{BASE}/ui/" with one-time token\n'
    [url] = opened
    assert url.startswith(f"{BASE}/ui/?ott=")
    assert exchanged(api, url.split("ott=", 1)[1]) == (200, management)


def test_without_a_token_there_is_no_one_time_token(api: FlaskClient) -> None:
    bootstrap(api)
    result = cli("ui", "-authenticate", "-show-url")
    assert result.exit_code == 1
    assert "Could not get one-time token" in result.output and "URL for web UI" not in result.output
