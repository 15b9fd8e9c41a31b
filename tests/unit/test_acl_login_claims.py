"""The pure half of /v1/acl/login: claim mapping (names and JSON pointers, lists from scalars),
selector matching over value/list, and `${...}` interpolation as Nomad's HIL use."""

from __future__ import annotations

import pytest

from app.acl.login import Claims, LoginError, interpolate, map_claims, selector_matches, token_name, variables
from app.wire.json import JsonObject

pytestmark = pytest.mark.unit

CONFIG: JsonObject = {
    "ClaimMappings": {"team": "team", "/org/id": "org", "admin": "admin", "missing": "gone"},
    "ListClaimMappings": {"groups": "groups", "role": "roles"},
}


def test_claims_are_mapped_by_name_and_json_pointer_and_stringified() -> None:
    claims: JsonObject = {"team": "Eng", "org": {"id": 42}, "admin": True, "groups": ["a", "", "b"], "role": "ops"}
    mapped = map_claims(claims, CONFIG)
    assert mapped.value == {"team": "Eng", "org": "42", "admin": "true"}
    assert mapped.list == {"groups": ["a", "b"], "roles": ["ops"]}  # a scalar becomes a one-item list


def test_a_claim_of_an_unmappable_type_is_refused() -> None:
    with pytest.raises(LoginError, match="team"):
        map_claims({"team": {"nested": "x"}}, CONFIG)


def test_selectors_read_value_and_list_and_a_broken_one_matches_nothing() -> None:
    claims = Claims({"team": "eng"}, {"groups": ["dev"]})
    assert selector_matches("", claims)
    assert selector_matches('value.team == "eng" and "dev" in list.groups', claims)
    assert not selector_matches('"ops" in list.groups', claims)
    assert not selector_matches("value.team ==", claims)


def test_interpolation_lowercases_bind_names_and_refuses_unknown_variables() -> None:
    claims = Claims({"team": "Eng"}, {})
    assert interpolate("${value.team}-role", variables(claims), lowercase=True) == "eng-role"
    assert token_name("${auth_method_type}-${value.team}", "JWT", "corp", claims) == "JWT-Eng"
    with pytest.raises(LoginError, match=r"value\.nope"):
        interpolate("${value.nope}", variables(claims), lowercase=True)
