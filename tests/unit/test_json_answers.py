"""The API's answers written by orjson (app.api.http.json_answers): the bytes Flask's own provider
wrote for what answers carry, and the standard library's way for what orjson refuses."""

from __future__ import annotations

import datetime
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from flask import Flask, Response
from flask.json.provider import DefaultJSONProvider

from app.api.http.json_answers import OrjsonProvider

pytestmark = pytest.mark.unit


def apps(debug: bool = False) -> tuple[Flask, Flask]:
    """An app answering with orjson and one with Flask's own provider (keys kept in order)."""
    fast, plain = Flask("fast"), Flask("plain")
    fast.json = OrjsonProvider(fast)
    plain.json.sort_keys = False  # type: ignore[attr-defined]
    fast.debug = plain.debug = debug
    return fast, plain


def answered(app: Flask, body: Any) -> bytes:
    with app.app_context():
        reply = app.json.response(body)
    assert isinstance(reply, Response)
    return reply.get_data()


@dataclass
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    left: int
    right: str


ANSWER = {
    "ID": "web",
    "Priority": 50,
    "Stop": False,
    "Meta": None,
    "Datacenters": ["dc1", "dc2"],
    "Summary": {"g": {"Queued": 0, "Running": 3}},
    "Score": 0.123456,
    "Tuple": (1, 2),
    "Index": 2**63 - 1,
}


@pytest.mark.parametrize(
    "body",
    [
        ANSWER,
        [ANSWER, ANSWER],
        {"NodeID": uuid.UUID("7a3c2e9e-8d1b-4c55-9a2f-0e1d2c3b4a59")},  # a UUID as its text
        {"At": datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)},  # an HTTP date, as Flask's
        {"Point": Point(1, 2)},  # a dataclass as its fields
        {"Pair": Pair(1, "a")},  # refused by orjson: written as the standard library writes it
        {"Huge": 2**70},  # beyond 64 bits (a task's config may hold it): the same
        {1: "one", None: "none"},  # keys written as strings, as the standard library does
        [],
        "",
    ],
)
def test_an_answer_is_the_bytes_flasks_own_provider_wrote(body: Any) -> None:
    fast, plain = apps()
    assert answered(fast, body) == answered(plain, body)


def test_text_outside_ascii_is_utf8_and_reads_back_the_same() -> None:
    fast, plain = apps()
    body = {"Name": "café-東京", "Meta": {"émoji": "🚀"}}
    written = answered(fast, body)
    assert "café-東京".encode() in written and written != answered(plain, body)
    assert json.loads(written) == json.loads(answered(plain, body)) == body


def test_nan_is_null_not_a_literal_no_parser_reads() -> None:
    fast, plain = apps()
    assert answered(plain, {"x": math.nan}) == b'{"x":NaN}\n'
    assert answered(fast, {"x": math.nan}) == b'{"x":null}\n'


def test_a_value_no_encoder_knows_is_still_refused() -> None:
    fast, _ = apps()
    with pytest.raises(TypeError):
        answered(fast, {"x": object()})


def test_debug_answers_are_indented_as_flasks() -> None:
    fast, plain = apps(debug=True)
    assert answered(fast, ANSWER) == answered(plain, ANSWER)
    assert b'\n  "ID": "web"' in answered(fast, ANSWER)


def test_dumps_with_options_of_the_standard_library_uses_it() -> None:
    fast, plain = apps()
    with fast.app_context():
        assert fast.json.dumps(ANSWER) == json.dumps(ANSWER, separators=(",", ":"))
        assert fast.json.dumps(ANSWER, indent=1) == DefaultJSONProvider(plain).dumps(ANSWER, indent=1, sort_keys=False)


def test_an_ordinary_answer_never_reaches_the_standard_library(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, _ = apps()

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("the standard library's encoder was used")

    monkeypatch.setattr(json, "dumps", refuse)
    assert json.loads(answered(fast, ANSWER)) == {**ANSWER, "Tuple": [1, 2]}
    with pytest.raises(AssertionError):
        answered(fast, {"Pair": Pair(1, "a")})  # the check can fail: a refused value does reach it
