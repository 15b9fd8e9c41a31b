"""Hypothesis strategies and the never-5xx check shared by the API fuzz tests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import psycopg
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


NASTY_TEXT = ["", "\x00", "a\x00b", "*", "all", "default", "%", "_", "\\", "💥", "\u202e", "é" * 300, "1s", "-1"]


texts = st.text(max_size=20) | st.sampled_from(NASTY_TEXT)


# JSON may also carry lone surrogates (\ud800), which no UTF-8 database text can hold.
body_texts = texts | st.sampled_from(["\ud800", "a\udfffb"])


integers = (
    st.integers(min_value=-5, max_value=100)
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.sampled_from([2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**40])
)


floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([float("nan"), float("inf"), 1e308, 0.5])


scalars = st.none() | st.booleans() | integers | floats | body_texts


def send(
    client: FlaskClient,
    method: str,
    url: str,
    body: Any,
    content_type: str | None,
    ledger: Ledger | None = None,
    deep: str | None = None,
) -> int:
    """One request: no 5xx, a JSON answer, and with a ledger nothing written on a 4xx."""
    # Nomad's Go client sends no Content-Type; NaN and Infinity go out as the bare tokens.
    headers = {"Content-Type": content_type} if content_type else {}
    before = ledger.read() if ledger else {}
    resp = client.open(url, method=method, data=encoded(body, deep), headers=headers)
    assert resp.status_code < 500, (url, body, resp.json)
    assert resp.is_json, (url, body, resp.data[:200])
    if ledger and 400 <= resp.status_code < 500:
        changed = Ledger.changed(before, ledger.read())
        assert not changed, (url, body, resp.json, changed)
    return resp.status_code


content_types = st.sampled_from([None, "application/json", "text/plain"])


query_values = (
    texts
    | integers.map(str)
    | st.builds(lambda n, u: f"{n}.{u}", integers, st.uuids())
    | st.sampled_from(["*", "true", "0", "1ms", "5m"])
)


# --- Every route of the app, its path filled with fuzzed values -----------------------------


def tolerated(status: int, url: str) -> bool:
    """No 5xx, but for the gateway answers that report on other processes: a client node the
    proxy cannot reach (the fuzz node has no agent behind it), and a forced GC that no worker
    ran within force_gc_wait_s (504: it carries on). A 501 is a deliberate answer: a Nomad route
    for machinery corral does not have, naming the replacement (app/api/routes/replaced.py)."""
    if status < 500 or status == 501:
        return True
    return (status in (502, 504) and url.startswith("/v1/client/")) or (
        status == 504 and url.startswith("/v1/system/gc")
    )


SENTINEL = "__fuzz_deep__"


@dataclass(frozen=True)
class Route:
    method: str
    rule: str  # Flask's pattern, e.g. /v1/job/<path:job_id>/plan
    variables: tuple[str, ...]

    def url(self, values: dict[str, str]) -> str:
        path = self.rule
        for name in self.variables:
            path = re.sub(rf"<(?:\w+:)?{name}>", quote(values[name], safe=""), path)
        return path


def routes(app: Flask) -> list[Route]:
    """Every (method, rule) the app serves, HEAD and OPTIONS aside, in a stable order."""
    found = {
        Route(method, rule.rule, tuple(sorted(rule.arguments)))
        for rule in app.url_map.iter_rules()
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    return sorted(found, key=lambda r: (r.rule, r.method))


def deep_text(depth: int, kind: str) -> str:
    """JSON nested `depth` levels, built as text: json.dumps itself cannot nest this deep."""
    if kind == "array":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a": ' * depth + "1" + "}" * depth
    return '[{"a": ' * (depth // 2) + "[]" + "}]" * (depth // 2)


deep_values = st.builds(
    deep_text, st.integers(min_value=60, max_value=5_000), st.sampled_from(["array", "object", "mixed"])
)


def encoded(body: Any, deep: str | None = None) -> bytes:
    """`body` as JSON (NaN and Infinity as bare tokens), the SENTINEL string swapped for `deep`."""
    text = json.dumps(body, allow_nan=True)
    return (text.replace(json.dumps(SENTINEL), deep) if deep is not None else text).encode()


class Ledger:
    """Row counts of every table and the state index: what a refused request must leave as it was."""

    def __init__(self, pg: psycopg.Connection[tuple[object, ...]]) -> None:
        self.pg = pg
        tables = [
            str(row[0])
            for row in pg.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version' "
                "ORDER BY tablename"
            )
        ]
        counts = ", ".join(f'(SELECT count(*) FROM "{t}")' for t in tables)
        self.tables = tables
        self.query = f"SELECT (SELECT max(value) FROM state_index), {counts}"

    def read(self) -> dict[str, object]:
        row = self.pg.execute(self.query).fetchone()
        assert row is not None
        return dict(zip(["state_index", *self.tables], row, strict=True))

    @staticmethod
    def changed(before: dict[str, object], after: dict[str, object]) -> dict[str, tuple[object, object]]:
        return {name: (before[name], after[name]) for name in before if before[name] != after[name]}
