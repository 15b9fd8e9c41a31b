"""Hypothesis strategies and the never-5xx check shared by the API fuzz tests."""

from __future__ import annotations

import json
from typing import Any

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


def send(client: FlaskClient, method: str, url: str, body: Any, content_type: str | None) -> None:
    # Nomad's Go client sends no Content-Type; NaN and Infinity go out as the bare tokens.
    headers = {"Content-Type": content_type} if content_type else {}
    resp = client.open(url, method=method, data=json.dumps(body, allow_nan=True).encode(), headers=headers)
    assert resp.status_code < 500, (url, body, resp.json)
    assert resp.is_json, (url, body, resp.data[:200])


content_types = st.sampled_from([None, "application/json", "text/plain"])


query_values = (
    texts
    | integers.map(str)
    | st.builds(lambda n, u: f"{n}.{u}", integers, st.uuids())
    | st.sampled_from(["*", "true", "0", "1ms", "5m"])
)
