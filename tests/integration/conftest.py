from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app import create_app
from app.cli.support import http
from app.db.leadership import Leadership
from app.settings.config import Settings


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5), database_url)
    # No `with`: a preserved request context would break requests made from other threads.
    yield app.test_client()
    app.extensions["corral"].close()


@pytest.fixture
def sent(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, Any]]]:
    """Route the CLI's requests to the test client; records (method, path, body)."""
    calls: list[tuple[str, str, Any]] = []

    def fake(method: str, url: str, body: Any, headers: dict[str, str], timeout_s: float) -> http.Answer:
        target = url.removeprefix("http://corral.test")
        path = target.split("?", 1)[0]
        calls.append((method, path, body))
        resp = client.open(target, method=method, json=body)
        return http.Answer(resp.status_code, resp.status.split(" ", 1)[-1], resp.get_data())

    monkeypatch.setenv("CORRAL_ADDR", "http://corral.test")
    monkeypatch.setattr(http, "send", fake)
    yield calls


@pytest.fixture
def term(engine: Engine) -> Iterator[tuple[Leadership, int]]:
    """The applier's leadership and its term, held for the test (plans applied by hand)."""
    lead = Leadership(engine, "applier")
    assert lead.try_acquire() and lead.term is not None
    yield lead, lead.term
    lead.close()


@pytest.fixture
def lead(term: tuple[Leadership, int]) -> Leadership:
    """The applier's leadership alone (its term is `lead.term`)."""
    return term[0]
