"""docs/api.md's table of Nomad's routes is the one the Flask URL map gives: a route added or
removed without regenerating the table (`uv run python -m app.api.http.route_states`) fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from app.api.http.route_states import BEGIN, END, NOT_APPLICABLE, PARTIAL, nomad_routes, probe, states, table

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_the_docs_table_is_the_url_maps() -> None:
    text = DOC.read_text()
    shown = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert shown == table(probe()), "docs/api.md is stale: run `uv run python -m app.api.http.route_states`"


def test_states_follow_the_url_map() -> None:
    rows = {f"{methods} {path}": state for methods, path, state, _ in states(probe())}
    assert rows["GET,POST /v1/jobs/statuses"] == "full"
    assert rows["PUT,POST /v1/node/:node_id/purge"] == "partial"
    assert rows["GET /v1/operator/raft/configuration"] == "partial"  # the database's members
    assert rows["GET /v1/operator/snapshot"] == "not applicable"  # served: a 501 naming pg_dump
    notes = {f"{methods} {path}": note for methods, path, _, note in states(probe())}
    assert notes["GET /v1/operator/snapshot"].endswith("answered with a 501 naming it")
    assert rows["GET /v1/acl/roles"] == "full"
    assert rows["GET /v1/acl/auth-methods"] == "full"
    assert rows["PUT,POST /v1/acl/oidc/auth-url"] == "full"
    assert rows["GET /.well-known/openid-configuration"] == "full"
    bare = Flask("bare")
    assert {state for _, _, state, _ in states(bare)} <= {"missing", "not applicable"}


def test_a_route_served_for_some_methods_only_is_partial() -> None:
    app = Flask("one-method")
    app.add_url_rule("/v1/jobs", "jobs.register", lambda: "", methods=["PUT"])
    rows = {f"{methods} {path}": (state, note) for methods, path, state, note in states(app)}
    assert rows["PUT,POST /v1/jobs"] == ("partial", "no POST")
    assert rows["GET /v1/jobs"] == ("missing", "")


def test_the_notes_name_only_nomad_routes_and_nothing_is_both_served_and_not_applicable() -> None:
    known = {f"{methods} {path}" for methods, path in nomad_routes()}
    assert set(NOT_APPLICABLE) <= known and set(PARTIAL) <= known
    assert len(known) == len(nomad_routes()), "a route is listed twice"
    served = {f"{m} {p}" for m, p, state, _ in states(probe()) if state in ("full", "partial")}
    assert not served & set(NOT_APPLICABLE)
