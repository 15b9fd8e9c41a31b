"""ACL-enabled apps for tests, and the CLI against one in-process: the CLI's requests are served by the Flask test
client of an app on the test's database, and `field` reads a `Name = value` line of its output."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app import create_app
from app.cli.support import http
from app.settings.config import Settings
from app.wire.json import JsonObject, JsonValue


def acl_enabled_api(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlaskClient]:
    """Yield the test client the CLI's requests go to (CORRAL_ADDR set, no token inherited)."""
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    test_client = app.test_client()

    def send(method: str, url: str, body: JsonValue, headers: dict[str, str], timeout_s: float) -> http.Answer:
        resp = test_client.open(url.removeprefix("http://corral.test"), method=method, json=body, headers=headers)
        return http.Answer(resp.status_code, resp.status.split(" ", 1)[-1], resp.get_data())

    monkeypatch.setenv("CORRAL_ADDR", "http://corral.test")
    monkeypatch.delenv("CORRAL_TOKEN", raising=False)
    monkeypatch.delenv("NOMAD_TOKEN", raising=False)
    monkeypatch.setattr(http, "send", send)
    yield test_client
    app.extensions["corral"].close()


def field(output: str, name: str) -> str:
    """The value of the `name = value` line of a command's output."""
    match = re.search(rf"^{re.escape(name)}\s+= (.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def acl_enabled_app(database_url: str) -> Iterator[Flask]:
    """An ACL-enabled app on the test's database, closed after the test."""
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def json_object(resp: TestResponse) -> JsonObject:
    """A 200 answer's JSON object (the assertion names the body otherwise)."""
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.json
    assert isinstance(body, dict)
    return body


def bootstrap(api: FlaskClient) -> dict[str, str]:
    """The management token's headers, from the ACL bootstrap."""
    secret = json_object(api.post("/v1/acl/bootstrap"))["SecretID"]
    assert isinstance(secret, str)
    return {"X-Nomad-Token": secret}
