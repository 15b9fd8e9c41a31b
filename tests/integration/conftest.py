from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.config import Settings


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5), database_url)
    # No `with`: a preserved request context would break requests made from other threads.
    yield app.test_client()
    app.extensions["corral"].close()


@pytest.fixture
def sent(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, Any]]]:
    """Route the CLI's httpx requests to the test client; records (method, path, body)."""
    calls: list[tuple[str, str, Any]] = []

    def fake(method: str, url: str, **kwargs: Any) -> httpx.Response:
        path = url.removeprefix("http://corral.test")
        params = {k: v for k, v in (kwargs.get("params") or {}).items() if v is not None}
        calls.append((method, path, kwargs.get("json")))
        resp = client.open(path, method=method, query_string=params, json=kwargs.get("json"))
        return httpx.Response(resp.status_code, content=resp.get_data(), headers=dict(resp.headers))

    monkeypatch.setenv("CORRAL_ADDR", "http://corral.test")
    monkeypatch.setattr(httpx, "request", fake)
    yield calls
