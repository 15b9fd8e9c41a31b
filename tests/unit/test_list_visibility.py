"""The caller's namespace visibility is applied before the filter and the page (app.api.http.listing,
app.api.access.visibility), and a ListIn list built without it is refused, not answered
(app.api.access.enforcement): lists fail closed."""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Mapping
from typing import Any

import pytest
from flask import Flask, Response, g

from app.acl import policy as pol
from app.acl.capabilities import Acl
from app.api import register
from app.api.access.authz import REQUIREMENTS
from app.api.access.callers import Caller
from app.api.access.enforcement import UNFILTERED_LIST, _filter_lists
from app.api.access.requirements import ListIn
from app.api.access.visibility import EVERYTHING, Visibility
from app.api.http.listing import Entry, ListQuery, Order, page
from app.bexpr import compile_filter

pytestmark = pytest.mark.unit

DEFAULT_READER = Acl.compile([pol.parse('namespace "default" { policy = "read" }')])
ONLY_DEFAULT = Visibility(DEFAULT_READER, pol.READ_JOB)


def entries(evaluated: list[str]) -> list[Entry[str]]:
    """default.a, secret.b, default.c, secret.d; each view records that the filter saw it."""

    def view(namespace: str, object_id: str) -> Mapping[str, Any]:
        evaluated.append(f"{namespace}.{object_id}")
        return {"ID": object_id, "Namespace": namespace}

    pairs = [("default", "a"), ("secret", "b"), ("default", "c"), ("secret", "d")]
    return [Entry(ns, i, n, functools.partial(view, ns, i), f"{ns}.{i}") for n, (ns, i) in enumerate(pairs)]


def query(visibility: Visibility, *, per_page: int | None = 1, token: str | None = None, **kw: Any) -> ListQuery:
    predicate = compile_filter(kw["filter"]) if "filter" in kw else None
    return ListQuery(predicate, per_page, token, kw.get("reverse", False), visibility)


def test_the_page_and_its_token_skip_what_the_caller_may_not_read() -> None:
    seen: list[str] = []
    assert page(entries(seen), Order.NAMESPACE_ID, query(ONLY_DEFAULT)) == (["default.a"], "default.c")
    assert page(entries(seen), Order.CREATE_INDEX_ID, query(ONLY_DEFAULT)) == (["default.a"], "2.c")
    assert page(entries(seen), Order.ID, query(ONLY_DEFAULT, token="b")) == (["default.c"], None)
    assert page(entries(seen), Order.ID, query(ONLY_DEFAULT, reverse=True)) == (["default.c"], "a")
    assert page(entries(seen), Order.ID, query(EVERYTHING)) == (["default.a"], "b")


def test_a_filter_never_evaluates_an_unreadable_object() -> None:
    seen: list[str] = []
    found = page(entries(seen), Order.ID, query(ONLY_DEFAULT, per_page=None, filter='ID != ""'))
    assert found == (["default.a", "default.c"], None)
    assert seen == ["default.a", "default.c"]


def test_every_list_in_route_builds_its_list_through_list_query() -> None:
    """list_query() carries the visibility into page(); a ListIn view that does not call it
    (itself, or through a helper of its module that takes list_visibility(), as
    /v1/jobs/statuses pages by ModifyIndex) would also be refused at run time (below)."""
    app = Flask("probe")
    register(app)
    for endpoint, requirement in REQUIREMENTS.items():
        if isinstance(requirement, ListIn):
            view = app.view_functions[endpoint]
            source = inspect.getsource(view)
            helpers = [getattr(inspect.getmodule(view), name, None) for name in re.findall(r"(\w+)\(", source)]
            takes = [inspect.getsource(h) for h in helpers if inspect.isfunction(h) and h is not view]
            assert "list_query(" in source or any("list_visibility()" in t for t in takes), endpoint


def filtered(items: list[dict[str, str]], *, taken: bool, acl: Acl = DEFAULT_READER) -> Response:
    app = Flask("probe")
    with app.test_request_context("/v1/jobs?namespace=*"):
        g.corral_list_capability = pol.READ_JOB
        g.corral_caller = Caller(acl, "accessor", ("reader",), "secret")
        if taken:
            g.corral_list_visibility_taken = True
        return _filter_lists(Response(json.dumps(items), status=200, content_type="application/json"))


def test_a_list_in_list_that_did_not_take_the_visibility_is_refused() -> None:
    refused = filtered([{"ID": "a", "Namespace": "default"}], taken=False)
    assert refused.status_code == 500 and refused.get_data(as_text=True) == UNFILTERED_LIST


def test_a_list_in_list_holding_an_unreadable_item_is_refused() -> None:
    assert filtered([{"ID": "b", "Namespace": "secret"}], taken=True).status_code == 500
    assert filtered([{"ID": "-", "Namespace": "-"}], taken=True).status_code == 500
    ok = filtered([{"ID": "a", "Namespace": "default"}], taken=True)
    assert ok.status_code == 200 and ok.get_json() == [{"ID": "a", "Namespace": "default"}]
    assert filtered([{"ID": "b", "Namespace": "secret"}], taken=True, acl=Acl(management=True)).status_code == 200
