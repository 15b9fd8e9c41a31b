"""Every route declares the capability it needs in app.api.access.authz.REQUIREMENTS (one table)."""

from __future__ import annotations

import pytest
from flask import Flask

from app.api import register
from app.api.access.authz import REQUIREMENTS

pytestmark = pytest.mark.unit


def _endpoints() -> set[str]:
    app = Flask("probe")
    register(app)
    return {rule.endpoint for rule in app.url_map.iter_rules()}


def test_every_route_declares_its_requirement() -> None:
    missing = sorted(_endpoints() - set(REQUIREMENTS))
    assert missing == [], f"routes without an entry in app/api/access/authz.py REQUIREMENTS: {missing}"


def test_no_requirement_names_a_route_that_does_not_exist() -> None:
    stale = sorted(set(REQUIREMENTS) - _endpoints())
    assert stale == [], stale


def test_the_check_can_fail() -> None:
    app = Flask("probe")
    register(app)
    app.add_url_rule("/v1/undeclared", "undeclared.view", lambda: "")
    assert "undeclared.view" in {r.endpoint for r in app.url_map.iter_rules()} - set(REQUIREMENTS)
