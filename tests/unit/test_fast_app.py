"""The test run's remembered URL builders (tests/support/fast_app.py) are the ones werkzeug would
compile: the same code for the same rule, a different one as soon as an input differs."""

from __future__ import annotations

import types

import pytest
from werkzeug.routing import Map, Rule

from app.db import schema
from tests.support.fast_app import _original_compile_builder

pytestmark = pytest.mark.unit


def rules() -> list[Rule]:
    return [
        Rule("/v1/jobs", endpoint="jobs"),
        Rule("/v1/job/<path:job_id>", endpoint="job"),
        Rule("/v1/job/<path:job_id>/allocations", endpoint="job_allocs"),
        Rule("/v1/page/<int:page>", endpoint="page", defaults={"kind": "all"}),
        Rule("/v1/page/<int:page>/<kind>", endpoint="page_kind"),
        Rule("/v1/top/<int:page>", endpoint="top", defaults={"page": 1}),
        Rule("/v1/top/<int:page>", endpoint="top_two", defaults={"page": 2}),
        Rule("/v1/<any(a, b):which>/x", endpoint="which"),
    ]


def code_of(builder: object) -> tuple[bytes, tuple[object, ...], tuple[str, ...]]:
    function = getattr(builder, "__func__", builder)
    assert isinstance(function, types.FunctionType)
    code = function.__code__
    return code.co_code, code.co_consts, code.co_varnames


def test_the_plugin_is_on() -> None:
    assert Rule._compile_builder is not _original_compile_builder
    assert schema.head_revision() == schema.head_revision.__wrapped__()  # type: ignore[attr-defined]


def test_every_remembered_builder_is_the_one_werkzeug_compiles_for_its_rule() -> None:
    for _ in range(2):  # the second map's rules get the remembered builders
        url_map = Map(rules())
        for rule in url_map.iter_rules():
            assert code_of(rule._build) == code_of(_original_compile_builder(rule, False)), rule.rule
            assert code_of(rule._build_unknown) == code_of(_original_compile_builder(rule, True)), rule.rule
    urls = Map(rules()).bind("corral.test")
    assert urls.build("job", {"job_id": "a/b"}) == "/v1/job/a/b"
    assert urls.build("page", {"page": 3}) == "/v1/page/3"
    assert urls.build("top") == "/v1/top/1" and urls.build("top_two") == "/v1/top/2"
    assert urls.build("jobs", {"namespace": "x y"}) == "/v1/jobs?namespace=x+y"


def test_rules_differing_only_in_a_default_get_builders_of_their_own() -> None:
    url_map = Map(rules())
    top, top_two = (next(r for r in url_map.iter_rules() if r.endpoint == name) for name in ("top", "top_two"))
    assert code_of(top._build) != code_of(top_two._build)
